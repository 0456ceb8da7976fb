package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"
)

type applier struct {
	t     testing.TB
	f     *FSM
	index uint64
	log   []Command // every command applied, in order (index i+1 at log[i])
}

// restoredCopy returns a new replica restored from a's snapshot, at a's
// index.
func (a *applier) restoredCopy() *applier {
	a.t.Helper()
	snap, err := a.f.EncodeSnapshot()
	if err != nil {
		a.t.Fatal(err)
	}
	r := &applier{t: a.t, f: New(), index: a.index, log: append([]Command(nil), a.log...)}
	if err := r.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		a.t.Fatal(err)
	}
	return r
}

// doShards encodes a shard command (split into batches as owners send it)
// and applies each batch, returning their results.
func (a *applier) doShards(op Op, c ShardCmd) []Result {
	a.t.Helper()
	cmds, err := EncodeShardCmds(op, c)
	if err != nil {
		a.t.Fatal(err)
	}
	var out []Result
	for _, b := range cmds {
		a.index++
		out = append(out, a.f.Apply(rawLog(a.index, b)).(Result))
	}
	return out
}

func (a *applier) do(c Command) Result {
	a.t.Helper()
	b, err := Encode(c)
	if err != nil {
		a.t.Fatal(err)
	}
	a.index++
	a.log = append(a.log, c)
	return a.f.Apply(&raft.Log{Index: a.index, Type: raft.LogCommand, Data: b}).(Result)
}

func createSession(id string) Command {
	return Command{Op: OpSessionCreate, Session: &SessionCmd{ID: id, Node: "n-" + id, TTLNanos: 1e9}}
}

func acquire(session, name string, req uint64, wait bool) Command {
	return Command{Op: OpAcquire, Lease: &LeaseCmd{Name: name, Session: session, Request: req, Wait: wait}}
}

func release(session, name string, token uint64) Command {
	return Command{Op: OpRelease, Lease: &LeaseCmd{Name: name, Session: session, Token: token}}
}

func TestLeaseGrantQueueAndHandOff(t *testing.T) {
	a := &applier{t: t, f: New()}
	for _, s := range []string{"a", "b", "c"} {
		if r := a.do(createSession(s)); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	r := a.do(acquire("a", "sched", 1, true))
	if r.Err != nil || r.Holder != "a" || r.Token != 1 {
		t.Fatalf("first acquire: %+v", r)
	}
	// A retried acquire whose first attempt committed returns the same token.
	if r2 := a.do(acquire("a", "sched", 1, true)); r2.Token != r.Token || !r2.Noop {
		t.Fatalf("retried acquire minted %d, want %d", r2.Token, r.Token)
	}
	if r := a.do(acquire("b", "sched", 1, false)); !errors.Is(r.Err, ErrLeaseHeld) || r.Holder != "a" {
		t.Fatalf("try-acquire of a held lease: %+v", r)
	}
	if r := a.do(acquire("b", "sched", 2, true)); !r.Queued {
		t.Fatalf("b not queued: %+v", r)
	}
	if r := a.do(acquire("c", "sched", 1, true)); !r.Queued {
		t.Fatalf("c not queued: %+v", r)
	}
	// A release with a stale token changes nothing.
	if r := a.do(release("a", "sched", 99)); !r.Noop {
		t.Fatalf("stale release applied: %+v", r)
	}
	a.do(release("a", "sched", 1))
	if s, tok, _ := a.f.View().Holder("sched"); s != "b" || tok <= 1 {
		t.Fatalf("after release: holder %s token %d, want b with a larger token", s, tok)
	}
	_, tokB, _ := a.f.View().Holder("sched")
	// b expires: c is next, with a larger token.
	b, _ := a.f.View().Session("b")
	if r := a.do(Command{Op: OpSessionExpire, Session: &SessionCmd{ID: "b", Created: b.Created + 100}}); !r.Noop {
		t.Fatal("expiry of another incarnation applied")
	}
	a.do(Command{Op: OpSessionExpire, Session: &SessionCmd{ID: "b", Created: b.Created}})
	if s, tok, _ := a.f.View().Holder("sched"); s != "c" || tok <= tokB {
		t.Fatalf("after expiry: holder %s token %d, want c above %d", s, tok, tokB)
	}
	if r := a.do(acquire("b", "sched", 3, true)); !errors.Is(r.Err, ErrNoSession) {
		t.Fatalf("acquire by an expired session: %+v", r)
	}
	a.do(Command{Op: OpSessionClose, Session: &SessionCmd{ID: "c"}})
	if _, _, ok := a.f.View().Holder("sched"); ok {
		t.Fatal("lease still held after its last session closed")
	}
}

// TestRandomHistories applies random session and lease commands and checks
// that tokens strictly increase per name, holders are live sessions,
// applying the same log twice gives identical snapshots, and a restored
// snapshot continues identically.
func TestRandomHistories(t *testing.T) {
	for seed := uint64(1); seed <= randomSeeds(200); seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		var log []Command
		for i := 0; i < 300; i++ {
			s := fmt.Sprintf("s%d", rng.IntN(6))
			name := fmt.Sprintf("l%d", rng.IntN(3))
			var c Command
			switch rng.IntN(6) {
			case 0:
				c = createSession(s)
			case 1:
				c = Command{Op: OpSessionExpire, Session: &SessionCmd{ID: s}}
			case 2:
				c = Command{Op: OpSessionClose, Session: &SessionCmd{ID: s}}
			case 3, 4:
				c = acquire(s, name, uint64(i), rng.IntN(2) == 0)
			default:
				c = release(s, name, 0)
			}
			log = append(log, c)
		}
		a, b := &applier{t: t, f: New()}, &applier{t: t, f: New()}
		last := map[string]uint64{}
		var restored *applier
		for i, c := range log {
			a.do(c)
			b.do(c)
			if restored != nil {
				restored.do(c)
			}
			v := a.f.View()
			for _, l := range v.Leases() {
				if l.Token < last[l.Name] {
					t.Fatalf("seed %d: token of %s went from %d to %d", seed, l.Name, last[l.Name], l.Token)
				}
				last[l.Name] = l.Token
				if _, ok := v.Session(l.Holder); !ok {
					t.Fatalf("seed %d: %s held by dead session %s", seed, l.Name, l.Holder)
				}
			}
			if i == len(log)/2 {
				restored = a.restoredCopy()
			}
		}
		sa, _ := a.f.EncodeSnapshot()
		sb, _ := b.f.EncodeSnapshot()
		sr, _ := restored.f.EncodeSnapshot()
		if !bytes.Equal(sa, sb) || !bytes.Equal(sa, sr) {
			da, _ := decodeSnapshot(sa)
			dr, _ := decodeSnapshot(sr)
			ja, _ := json.Marshal(da.State)
			jr, _ := json.Marshal(dr.State)
			t.Fatalf("seed %d: replicas diverge (a==b %v)\n%s\n%s", seed, bytes.Equal(sa, sb), ja, jr)
		}
	}
}
