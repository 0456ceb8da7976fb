package fsm

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func pin(shard uint32, node string, once bool) Command {
	return Command{Op: OpShardPin, Pin: &PinCmd{Shard: shard, Node: node, Once: once}}
}

func unpin(shard uint32, node string) Command {
	return Command{Op: OpShardPin, Pin: &PinCmd{Shard: shard, Node: node, Clear: true}}
}

// pinHistory is goldenHistory plus three pins, one of them a move, and an
// unpin.
func pinHistory(t *testing.T) *applier {
	a := goldenHistory(t)
	a.do(pin(1, "nb", false))
	a.do(pin(2, "na", true))
	a.do(pin(9, "nc", false))
	a.do(unpin(9, ""))
	return a
}

// TestShardPins: a pin sets a shard's node (Count 1 when it changes the
// state, 0 when repeated); a clear removes it, only if it names the node
// given (or any); a pin outside the table or of a bad node name is an
// error that changes nothing.
func TestShardPins(t *testing.T) {
	a := goldenHistory(t)
	if r := a.do(pin(1, "nb", false)); r.Err != nil || r.Count != 1 {
		t.Fatalf("pin: %+v", r)
	}
	if r := a.do(pin(1, "nb", false)); r.Err != nil || r.Count != 0 {
		t.Fatalf("the same pin again: %+v", r)
	}
	before := a.index
	if p, ok := a.f.View().ShardPin(1); !ok || p.Node != "nb" || p.Once || p.Index != before-1 {
		t.Fatalf("pin of shard 1: %+v %v", p, ok)
	}
	if r := a.do(unpin(1, "na")); r.Count != 0 {
		t.Fatalf("a clear naming another node removed the pin: %+v", r)
	}
	if r := a.do(unpin(1, "nb")); r.Count != 1 {
		t.Fatalf("clear: %+v", r)
	}
	if _, ok := a.f.View().ShardPin(1); ok || len(a.f.View().Pins()) != 0 {
		t.Fatal("the pin survived its clear")
	}
	for _, c := range []Command{pin(40, "na", false), pin(1, "", false)} {
		if r := a.do(c); r.Err == nil || len(a.f.View().Pins()) != 0 {
			t.Fatalf("%+v: %+v; want an error and no pin", c.Pin, r)
		}
	}
}

// TestGoldenPinCommands pins the encoding of OpShardPin
// (testdata/pin-commands.golden, under PinCommandVersion); the same body
// under another version is refused.
func TestGoldenPinCommands(t *testing.T) {
	cmds := []Command{pin(1, "nb", false), pin(2, "na", true), unpin(9, ""), unpin(3, "nc")}
	lines := checkGoldenCommands(t, filepath.Join("testdata", "pin-commands.golden"), cmds,
		func(got, want Command) bool { return got.Pin != nil && *got.Pin == *want.Pin })
	if lines[0][:2] != "05" {
		t.Fatalf("pin written under version %s", lines[0][:2])
	}
	b := mustEncode(t, cmds[0])
	for _, v := range []byte{CommandVersion, ValueCommandVersion} {
		bad := append([]byte{v}, b[1:]...)
		if _, err := Decode(bad); err == nil {
			t.Errorf("a pin under version %d decodes", v)
		}
	}
	if _, err := Decode(append([]byte{PinCommandVersion, byte(OpAcquire)}, b[2:]...)); !errors.Is(err, ErrMalformed) {
		t.Errorf("another op under the pin version: %v", err)
	}
}

// TestGoldenPinSnapshot pins a snapshot with pins (testdata/snapshot-pin
// .golden, under SnapshotPinVersion): it restores to the same bytes and
// pins; the same bytes marked version 1 are refused; a state without pins
// keeps writing the earlier versions, and the earlier goldens still read.
func TestGoldenPinSnapshot(t *testing.T) {
	path := filepath.Join("testdata", "snapshot-pin.golden")
	if *updateGolden {
		b, err := pinHistory(t).f.EncodeSnapshot()
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
	if golden[0] != SnapshotPinVersion {
		t.Fatalf("golden snapshot of version %d", golden[0])
	}
	if b, _ := pinHistory(t).f.EncodeSnapshot(); !bytes.Equal(b, golden) {
		t.Fatal("the pin history now encodes differently from " + path)
	}
	f := New()
	if err := f.Restore(io.NopCloser(bytes.NewReader(golden))); err != nil {
		t.Fatal(err)
	}
	if again, _ := f.EncodeSnapshot(); !bytes.Equal(again, golden) {
		t.Fatal("the restored pin snapshot encodes differently")
	}
	pins := f.View().Pins()
	if len(pins) != 2 || pins[0].Shard != 1 || pins[0].Node != "nb" || pins[1].Shard != 2 || !pins[1].Once {
		t.Fatalf("restored pins %+v", pins)
	}
	v1 := append([]byte{SnapshotVersion}, golden[1:]...)
	if err := New().Restore(io.NopCloser(bytes.NewReader(v1))); !errors.Is(err, ErrMalformed) {
		t.Errorf("pins under snapshot version 1: %v, want refused", err)
	}
	if b, _ := goldenHistory(t).f.EncodeSnapshot(); b[0] != SnapshotVersion {
		t.Errorf("a snapshot without pins is written under version %d", b[0])
	}
}
