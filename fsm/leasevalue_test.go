package fsm

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func acquireValued(session, name string, req uint64, wait bool, value string) Command {
	return Command{Op: OpAcquire, Lease: &LeaseCmd{Name: name, Session: session, Request: req, Wait: wait, Value: value}}
}

func setValue(session, name string, req, token, seq uint64, value string) Command {
	return Command{Op: OpLeaseValue, Lease: &LeaseCmd{Name: name, Session: session, Request: req, Token: token, Value: value, ValueSeq: seq}}
}

// TestHolderValue: an acquire's value is the grant's; OpLeaseValue
// changes it under the same token, once per sequence number (a late or
// repeated update changes nothing), only for the grant its request holds;
// a waiter's value goes with its grant, starting a new sequence; values
// that are too long or not UTF-8 are refused.
func TestHolderValue(t *testing.T) {
	a := newLeaseApplier(t, "a", "b")
	r := a.do(acquireValued("a", "x", 1, false, "10.0.0.1:8080"))
	if r.Err != nil || r.Queued {
		t.Fatal(r)
	}
	token := r.Token
	a.do(acquireValued("b", "x", 1, true, "10.0.0.2:8080"))
	v := a.f.View()
	if got := v.HolderValue("x"); got != "10.0.0.1:8080" {
		t.Fatalf("value after the acquire %q", got)
	}
	if r := a.do(setValue("a", "x", 1, token, 1, "10.0.0.1:9090")); r.Err != nil || r.Noop || r.Token != token {
		t.Fatalf("value update: %+v", r)
	}
	for _, c := range []Command{
		setValue("a", "x", 1, token, 1, "late copy"), // the same sequence again
		setValue("a", "x", 1, token, 0, "older"),     // below it
	} {
		if r := a.do(c); r.Err != nil || !r.Noop || r.Stale {
			t.Fatalf("late update %+v: %+v, want a no-op", c.Lease, r)
		}
	}
	for _, c := range []Command{
		setValue("a", "x", 2, 0, 5, "another request"),
		setValue("a", "x", 1, token+100, 5, "another token"),
		setValue("b", "x", 1, 0, 5, "a waiter"),
		setValue("a", "nothing", 1, 0, 5, "no such lease"),
	} {
		if r := a.do(c); r.Err != nil || !r.Stale {
			t.Fatalf("update %+v of a grant it does not hold: %+v, want stale", c.Lease, r)
		}
	}
	l, _ := a.f.View().Lease("x")
	if l.Value != "10.0.0.1:9090" || l.ValueSeq != 1 || l.Token != token {
		t.Fatalf("lease after the updates: %+v", l)
	}
	a.do(leave("a", "x", 1))
	l, _ = a.f.View().Lease("x")
	if l.Holder != "b" || l.Value != "10.0.0.2:8080" || l.ValueSeq != 0 {
		t.Fatalf("the waiter's grant: %+v, want its own value", l)
	}
	if r := a.do(setValue("b", "x", 1, 0, 1, "b moved")); r.Err != nil || r.Noop {
		t.Fatalf("the new holder's first update: %+v", r)
	}
	for _, bad := range []string{strings.Repeat("v", MaxValueLength+1), "\xff\xfe"} {
		before := a.f.View().Index()
		for _, c := range []Command{acquireValued("a", "y", 9, false, bad), setValue("b", "x", 1, 0, 2, bad)} {
			if r := a.do(c); !errors.Is(r.Err, ErrMalformed) {
				t.Errorf("value %q: %+v, want refused", bad[:2], r)
			}
		}
		if _, held := a.f.View().Lease("y"); held || a.f.View().HolderValue("x") != "b moved" || a.f.View().Index() != before+2 {
			t.Errorf("a refused value changed the state")
		}
	}
	r2 := a.restoredCopy()
	if got := r2.f.View().HolderValue("x"); got != "b moved" {
		t.Errorf("restored value %q", got)
	}
}

// TestValueEncoding: commands with a holder value are written under
// ValueCommandVersion, so that an earlier release refuses them instead of
// dropping the value; an acquire without one keeps version 1, byte for
// byte; any other combination is refused by Decode.
func TestValueEncoding(t *testing.T) {
	plain := mustEncode(t, acquire("a", "x", 1, true))
	valued := mustEncode(t, acquireValued("a", "x", 1, true, "v"))
	update := mustEncode(t, setValue("a", "x", 1, 7, 1, "w"))
	if plain[0] != CommandVersion || valued[0] != ValueCommandVersion || update[0] != ValueCommandVersion {
		t.Fatalf("versions %d %d %d", plain[0], valued[0], update[0])
	}
	forged := func(version byte, c Command) []byte {
		b := mustEncode(t, c)
		return append([]byte{version}, b[1:]...)
	}
	for name, b := range map[string][]byte{
		"an acquire with a value under version 1":    forged(CommandVersion, acquireValued("a", "x", 1, true, "v")),
		"an acquire without a value under version 4": forged(ValueCommandVersion, acquire("a", "x", 1, true)),
		"a release under version 4":                  forged(ValueCommandVersion, leave("a", "x", 1)),
		"a value update under version 1":             forged(CommandVersion, setValue("a", "x", 1, 7, 1, "w")),
	} {
		if _, err := Decode(b); err == nil {
			t.Errorf("%s decodes", name)
		}
	}
}

// valueHistory leaves leases with holder values, one on a waiter.
func valueHistory(t *testing.T) *applier {
	a := newLeaseApplier(t, "a", "b")
	a.do(initCluster(4))
	a.do(acquireValued("a", "x", 1, false, "10.0.0.1:8080"))
	a.do(acquireValued("b", "x", 1, true, "10.0.0.2:8080"))
	a.do(acquire("b", "y", 2, false))
	a.do(setValue("b", "y", 2, 0, 1, "ready"))
	return a
}

// TestGoldenValueCommands pins the encoding of the commands that carry a
// holder value (testdata/lease-value-commands.golden).
func TestGoldenValueCommands(t *testing.T) {
	cmds := []Command{acquireValued("a", "x", 1, true, "10.0.0.1:8080"), setValue("a", "x", 1, 7, 3, "10.0.0.1:9090")}
	checkGoldenCommands(t, filepath.Join("testdata", "lease-value-commands.golden"), cmds,
		func(got, want Command) bool { return got.Lease != nil && *got.Lease == *want.Lease })
}

// TestGoldenValueSnapshot pins a snapshot with holder values
// (testdata/snapshot-value.golden, under SnapshotValueVersion): it
// restores to the same bytes and values; the same bytes marked version 1
// are refused, and a state without values keeps writing version 1.
func TestGoldenValueSnapshot(t *testing.T) {
	path := filepath.Join("testdata", "snapshot-value.golden")
	if *updateGolden {
		b, err := valueHistory(t).f.EncodeSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if golden[0] != SnapshotValueVersion {
		t.Fatalf("golden snapshot of version %d", golden[0])
	}
	if b, _ := valueHistory(t).f.EncodeSnapshot(); !bytes.Equal(b, golden) {
		t.Fatal("the value history now encodes differently from " + path)
	}
	f := New()
	if err := f.Restore(io.NopCloser(bytes.NewReader(golden))); err != nil {
		t.Fatal(err)
	}
	if again, _ := f.EncodeSnapshot(); !bytes.Equal(again, golden) {
		t.Fatal("the restored value snapshot encodes differently")
	}
	x, _ := f.View().Lease("x")
	if x.Value != "10.0.0.1:8080" || len(x.Waiters) != 1 || x.Waiters[0].Value != "10.0.0.2:8080" || f.View().HolderValue("y") != "ready" {
		t.Fatalf("restored leases: %+v, y %q", x, f.View().HolderValue("y"))
	}
	v1 := append([]byte{SnapshotVersion}, golden[1:]...)
	if err := New().Restore(io.NopCloser(bytes.NewReader(v1))); !errors.Is(err, ErrMalformed) {
		t.Errorf("values under snapshot version 1: %v, want refused", err)
	}
	if b, _ := newLeaseApplier(t, "a").f.EncodeSnapshot(); b[0] != SnapshotVersion {
		t.Errorf("a snapshot without values is written under version %d", b[0])
	}
}
