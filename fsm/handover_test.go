package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"
)

func handover(session, name string, prev, prevToken, req uint64) Command {
	return Command{Op: OpLeaseHandover, Lease: &LeaseCmd{Name: name, Session: session, Request: req, Wait: true, Prev: prev, PrevToken: prevToken}}
}

// TestHandoverAloneGrantsTheNextRequest: with nobody else waiting, the
// handover's release frees the lease and its acquire takes it, with a new
// token, in one entry.
func TestHandoverAloneGrantsTheNextRequest(t *testing.T) {
	a := newLeaseApplier(t, "a")
	first := a.do(acquire("a", "x", 1, true))
	r := a.do(handover("a", "x", 1, first.Token, 2))
	if r.Err != nil || r.Queued || r.Holder != "a" || r.Request != 2 || r.Token != first.Token+1 {
		t.Fatalf("handover answered %+v, want a's request 2 granted with token %d", r, first.Token+1)
	}
	if h, tok, req, ok := a.f.View().Grant("x"); !ok || h != "a" || req != 2 || tok != r.Token {
		t.Fatalf("after the handover: holder %q request %d token %d ok %v", h, req, tok, ok)
	}
	// A retry of the committed handover mints nothing.
	if again := a.do(handover("a", "x", 1, first.Token, 2)); again.Token != r.Token || !again.Noop {
		t.Fatalf("a retried handover answered %+v, want token %d and no-op", again, r.Token)
	}
}

// TestHandoverKeepsTheQueueOrder: when another session waits, the release
// grants the lease to it and the acquire queues behind it.
func TestHandoverKeepsTheQueueOrder(t *testing.T) {
	a := newLeaseApplier(t, "a", "b")
	first := a.do(acquire("a", "x", 1, true))
	if r := a.do(acquire("b", "x", 1, true)); !r.Queued {
		t.Fatalf("b not queued: %+v", r)
	}
	r := a.do(handover("a", "x", 1, first.Token, 2))
	if r.Err != nil || !r.Queued || r.Holder != "b" {
		t.Fatalf("handover answered %+v, want a's request 2 queued behind b's grant", r)
	}
	l, _ := a.f.View().Lease("x")
	if l.Holder != "b" || l.Token != first.Token+1 || len(l.Waiters) != 1 || l.Waiters[0].Session != "a" || l.Waiters[0].Request != 2 {
		t.Fatalf("after the handover: %+v", l)
	}
}

// TestHandoverEqualsReleaseThenAcquire: from random lease states, a
// handover leaves exactly the state an OpRelease and an OpAcquire leave
// when applied at the same index, and answers as the acquire does.
func TestHandoverEqualsReleaseThenAcquire(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	sessions := []string{"a", "b", "c"}
	for round := range 300 {
		base := newLeaseApplier(t, sessions...)
		req := map[string]uint64{}
		for range rng.IntN(8) {
			s := sessions[rng.IntN(len(sessions))]
			req[s]++
			if rng.IntN(3) == 0 {
				base.do(leave(s, "x", uint64(rng.IntN(int(req[s]))+1)))
			} else {
				base.do(acquire(s, "x", req[s], rng.IntN(4) != 0))
			}
		}
		s := sessions[rng.IntN(len(sessions))]
		prev := uint64(rng.IntN(int(req[s])+1) + 1)
		var token uint64
		if _, tok, _, ok := base.f.View().Grant("x"); ok && rng.IntN(2) == 0 {
			token = tok + uint64(rng.IntN(2)) // the holder's token, or a wrong one
		}
		next := prev + 1 + uint64(rng.IntN(2))
		h := handover(s, "x", prev, token, next)
		split := base.restoredCopy()
		got := base.do(h)
		two := [][]byte{
			mustEncode(t, Command{Op: OpRelease, Lease: &LeaseCmd{Name: "x", Session: s, Request: prev, Token: token}}),
			mustEncode(t, acquire(s, "x", next, true)),
		}
		var want Result
		for _, b := range two { // both at the handover's index
			want = split.f.Apply(&raft.Log{Index: split.index + 1, Type: raft.LogCommand, Data: b}).(Result)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d: handover %+v answered %+v; release then acquire %+v", round, *h.Lease, got, want)
		}
		if !bytes.Equal(stateBytes(t, base.f), stateBytes(t, split.f)) {
			t.Fatalf("round %d: handover %+v left another state than release then acquire", round, *h.Lease)
		}
	}
}

// TestHandoverRefusesBadInputWhole: a handover that cannot be applied
// whole changes nothing, not even its release half.
func TestHandoverRefusesBadInputWhole(t *testing.T) {
	a := newLeaseApplier(t, "a")
	first := a.do(acquire("a", "x", 1, true))
	before := stateBytes(t, a.f)
	bad := handover("a", "x", 1, first.Token, 2)
	bad.Lease.Value = string([]byte{0xff})
	for name, c := range map[string]Command{
		"invalid value":   bad,
		"unknown session": handover("z", "x", 1, first.Token, 2),
	} {
		if r := a.do(c); r.Err == nil {
			t.Fatalf("%s: applied: %+v", name, r)
		}
		if !bytes.Equal(before, stateBytes(t, a.f)) {
			t.Fatalf("%s: a refused handover changed the state", name)
		}
	}
}

// TestHandoverEncoding: a handover is written under its own version, so
// an older release refuses it; its fields are refused anywhere else.
func TestHandoverEncoding(t *testing.T) {
	b := mustEncode(t, handover("a", "x", 1, 3, 2))
	if b[0] != HandoverCommandVersion {
		t.Fatalf("handover written under version %d", b[0])
	}
	c, err := Decode(b)
	if err != nil || c.Op != OpLeaseHandover || *c.Lease != *handover("a", "x", 1, 3, 2).Lease {
		t.Fatalf("decoded %+v, %v", c, err)
	}
	for name, c := range map[string]Command{
		"no released request":          handover("a", "x", 0, 0, 2),
		"asking before it releases":    handover("a", "x", 2, 0, 2),
		"an acquire releasing":         {Op: OpAcquire, Lease: &LeaseCmd{Name: "x", Session: "a", Request: 2, Prev: 1}},
		"a release with a prior token": {Op: OpRelease, Lease: &LeaseCmd{Name: "x", Session: "a", Request: 2, PrevToken: 1}},
	} {
		if _, err := Encode(c); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: encode: %v", name, err)
		}
	}
	// Hand-made bytes: another operation under the handover's version, and
	// a handover's fields under version 1.
	acq := mustEncode(t, acquire("a", "x", 2, true))
	acq[0] = HandoverCommandVersion
	if _, err := Decode(acq); !errors.Is(err, ErrMalformed) {
		t.Errorf("an acquire under the handover's version: %v", err)
	}
	b[0], b[1] = CommandVersion, byte(OpAcquire)
	if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
		t.Errorf("an acquire with a released request under version 1: %v", err)
	}
	b[1] = byte(OpLeaseHandover)
	if _, err := Decode(b); !errors.Is(err, ErrUnknownOp) && !errors.Is(err, ErrMalformed) {
		t.Errorf("a handover under version 1: %v", err)
	}
}

// SessionsAtLevel holds only while every live session was created at or
// above the level; a create of an older release carries none (0).
func TestSessionsAtLevel(t *testing.T) {
	a := newLeaseApplier(t)
	if !a.f.View().SessionsAtLevel(HandoverLevel) {
		t.Fatal("no sessions: not at the handover level")
	}
	newer := createSession("new")
	newer.Session.Level = CommandLevel
	a.do(newer)
	if !a.f.View().SessionsAtLevel(HandoverLevel) {
		t.Fatal("one session at this release's level: not at the handover level")
	}
	a.do(createSession("old"))
	if a.f.View().SessionsAtLevel(HandoverLevel) {
		t.Fatal("a session of an older release is live: at the handover level")
	}
	restored := a.restoredCopy()
	if restored.f.View().SessionsAtLevel(HandoverLevel) {
		t.Fatal("after a snapshot round trip: at the handover level")
	}
	a.do(Command{Op: OpSessionClose, Session: &SessionCmd{ID: "old"}})
	if !a.f.View().SessionsAtLevel(HandoverLevel) {
		t.Fatal("the older session closed: not at the handover level")
	}
}
