package lincheck

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestRecorderSettled: a settlement seen to commit returns, in the history,
// when it committed, with a known outcome, from the failed acquire's call;
// the failed acquire returns then too, before the bound a later acquire
// would give.
func TestRecorderSettled(t *testing.T) {
	var now int64
	r := NewRecorder(func() int64 { now++; return now })
	failed := r.Begin("w0", Input{Kind: Acquire, Name: "x", Client: "a"}) // 1
	failed.Fail()                                                         // 2
	settle := r.Settle("w0", failed)                                      // 3
	r.Settled(settle, r.Now())                                            // 4
	next := r.Begin("w0", Input{Kind: Acquire, Name: "x", Client: "a"})   // 5
	next.End(Output{Token: 9})                                            // 6
	ops := r.Finish(LeaseBounds)
	if ops[0].Return != 4 || ops[1].Call != 1 || ops[1].Return != 4 {
		t.Fatalf("failed acquire returns at %d, its settlement spans %d to %d; want 4, 1 to 4", ops[0].Return, ops[1].Call, ops[1].Return)
	}
	if ops[1].Output.(Output).Unknown || !ops[0].Input.(Input).Settled {
		t.Fatalf("a committed settlement's outcome is unknown, or its acquire is not marked settled: %+v, %+v", ops[1], ops[0])
	}
	if s := Count(ops); s.Settles != 1 || s.Settled != 1 || s.Failed != 1 {
		t.Fatalf("counts %+v", s)
	}
}

// TestRecorderSettledEarly: a settlement that committed before the failed
// acquire returned (the hook reports it before the worker records the
// settlement) spans the acquire's call to that moment, and so does the
// acquire.
func TestRecorderSettledEarly(t *testing.T) {
	var now int64
	r := NewRecorder(func() int64 { now++; return now })
	failed := r.Begin("w0", Input{Kind: Acquire, Name: "x", Client: "a"}) // 1
	at := r.Now()                                                         // 2: the commit
	failed.Fail()                                                         // 3
	r.Settled(r.Settle("w0", failed), at)                                 // 4
	ops := r.Finish(LeaseBounds)
	if ops[0].Return != 2 || ops[1].Call != 1 || ops[1].Return != 2 {
		t.Fatalf("failed acquire returns at %d, its settlement spans %d to %d; want 2, 1 to 2", ops[0].Return, ops[1].Call, ops[1].Return)
	}
}

// TestLeaseModelSettled: a settlement seen to commit frees the failed
// acquire's grant, and after it the acquire takes no effect.
func TestLeaseModelSettled(t *testing.T) {
	settled := func(call, ret int64) porcupine.Operation {
		return op(1, call, ret, Input{Kind: Settle, Client: "b", Ref: 3}, Output{})
	}
	failed := func(call, ret int64) porcupine.Operation {
		return op(1, call, ret, Input{Kind: Acquire, Client: "b", ID: 3, Settled: true}, Output{Unknown: true})
	}
	for _, tc := range []leaseCase{
		{"the grant seen, then freed by the settlement", []porcupine.Operation{
			failed(4, 20),
			op(2, 10, 11, read, seen(Holder{"b", 7})),
			settled(4, 20),
			op(2, 30, 31, read, seen()),
		}, true},
		{"the grant seen after the settlement committed", []porcupine.Operation{
			failed(4, 20),
			settled(4, 20),
			op(2, 30, 31, read, seen(Holder{"b", 7})),
		}, false},
		{"the settlement committed while the grant was seen", []porcupine.Operation{
			failed(4, 20),
			op(2, 10, 11, read, seen(Holder{"b", 7})),
			settled(4, 20),
			op(2, 30, 31, read, seen(Holder{"b", 7})),
		}, false},
		{"no grant: the name goes to another client", []porcupine.Operation{
			failed(4, 20),
			op(0, 5, 6, acq("a", 1), Output{Token: 8}),
			settled(4, 20),
			op(2, 30, 31, read, seen(Holder{"a", 8})),
		}, true},
		{"the settlement before the acquire's grant", []porcupine.Operation{
			settled(4, 6),
			op(2, 7, 8, read, seen()),
			failed(9, 20),
			op(2, 30, 31, read, seen(Holder{"b", 7})),
		}, false},
		{"an unknown settlement may not have freed it yet", []porcupine.Operation{
			op(1, 4, 100, acq("b", 3), Output{Unknown: true}),
			op(1, 5, 100, Input{Kind: Settle, Client: "b", Ref: 3}, Output{Unknown: true}),
			op(2, 30, 31, read, seen(Holder{"b", 7})),
		}, true},
	} {
		res, _ := Check(LeaseModel(), tc.ops, 10*time.Second)
		if (res == porcupine.Ok) != tc.ok {
			t.Errorf("%s: %s, want ok=%v", tc.name, res, tc.ok)
		}
	}
}

// TestRecorderReleasedBy: a failed release whose background release was
// seen to commit returns then, with a known outcome, and must have freed
// the grant: a read after it that still sees the grant is rejected.
func TestRecorderReleasedBy(t *testing.T) {
	var now int64
	r := NewRecorder(func() int64 { now++; return now })
	g := r.Begin("w0", Input{Kind: Acquire, Name: "x", Client: "a"})             // 1
	g.End(Output{Token: 5})                                                      // 2
	rel := r.Begin("w0", Input{Kind: Release, Name: "x", Client: "a", Token: 5}) // 3
	rel.Fail()                                                                   // 4
	r.ReleasedBy(rel, r.Now())                                                   // 5
	read := r.Begin("w1", Input{Kind: Read, Name: "x"})                          // 6
	read.End(Output{Holders: []Holder{{"a", 5}}})                                // 7
	ops := r.Finish(LeaseBounds)
	if ops[1].Return != 5 || ops[1].Output.(Output).Unknown {
		t.Fatalf("the release returns at %d with %+v, want 5 and a known outcome", ops[1].Return, ops[1].Output)
	}
	if res, _ := Check(LeaseModel(), ops, 10*time.Second); res != porcupine.Illegal {
		t.Fatalf("the grant seen after its release committed: %s, want Illegal", res)
	}
}
