package lincheck

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// op builds an operation of worker w on name "x".
func op(w int, call, ret int64, in Input, out Output) porcupine.Operation {
	in.Name = "x"
	return porcupine.Operation{ClientId: w, Input: in, Call: call, Output: out, Return: ret}
}

func acq(client string, id int) Input { return Input{Kind: Acquire, Client: client, ID: id} }
func rel(client string, token uint64) Input {
	return Input{Kind: Release, Client: client, Token: token}
}

var read = Input{Kind: Read}

func seen(hs ...Holder) Output { return Output{Holders: hs} }

// leaseCase is one history of TestLeaseModel and whether LeaseModel must
// accept it.
type leaseCase struct {
	name string
	ops  []porcupine.Operation
	ok   bool
}

// TestLeaseModel checks LeaseModel against the histories of
// leaseGrantCases and leaseFailureCases, in that order: each must be
// accepted (linearizable) exactly when its case says ok.
func TestLeaseModel(t *testing.T) {
	for _, tc := range append(leaseGrantCases(), leaseFailureCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := Check(LeaseModel(), tc.ops, 10*time.Second)
			if (res == porcupine.Ok) != tc.ok {
				t.Fatalf("check = %s, want ok=%v", res, tc.ok)
			}
		})
	}
}

// leaseGrantCases returns the lease histories about grants, releases,
// reads, tokens and refusals with no failed call.
func leaseGrantCases() []leaseCase {
	return []leaseCase{
		{"acquire, release, read free", []porcupine.Operation{
			op(0, 0, 1, acq("a", 1), Output{Token: 5}),
			op(0, 2, 3, rel("a", 5), Output{}),
			op(1, 4, 5, read, seen()),
		}, true},
		{"a read after a returned release still sees the holder", []porcupine.Operation{
			op(0, 0, 1, acq("a", 1), Output{Token: 5}),
			op(0, 2, 3, rel("a", 5), Output{}),
			op(1, 4, 5, read, seen(Holder{"a", 5})),
		}, false},
		{"a read concurrent with the release may see either", []porcupine.Operation{
			op(0, 0, 1, acq("a", 1), Output{Token: 5}),
			op(0, 2, 5, rel("a", 5), Output{}),
			op(1, 3, 4, read, seen(Holder{"a", 5})),
		}, true},
		{"two holders at once", []porcupine.Operation{
			op(0, 0, 1, acq("a", 1), Output{Token: 5}),
			op(1, 2, 3, acq("b", 2), Output{Token: 6}),
		}, false},
		{"a token not above the last one", []porcupine.Operation{
			op(0, 0, 1, acq("a", 1), Output{Token: 5}),
			op(0, 2, 3, rel("a", 5), Output{}),
			op(1, 4, 5, acq("b", 3), Output{Token: 4}),
		}, false},
		{"a refusal while free", []porcupine.Operation{
			op(0, 0, 1, Input{Kind: TryAcquire, Client: "b", ID: 1}, Output{Refused: true}),
		}, false},
		{"a refusal while another holds", []porcupine.Operation{
			op(0, 0, 1, acq("a", 1), Output{Token: 5}),
			op(1, 2, 3, Input{Kind: TryAcquire, Client: "b", ID: 2}, Output{Refused: true}),
		}, true},
	}
}

// leaseFailureCases returns the remaining lease histories: failed
// (unknown) acquires and a settlement, a failed release, a release of a
// grant not held, and refusals to the holder's own client (its holding
// caller, another caller, a caller whose failed acquire may hold the name).
func leaseFailureCases() []leaseCase {
	return []leaseCase{
		{"a failed acquire shows up later, then its settlement frees it", []porcupine.Operation{
			op(0, 0, 1, acq("a", 1), Output{Token: 5}),
			op(0, 2, 3, rel("a", 5), Output{}),
			op(1, 4, 100, acq("b", 3), Output{Unknown: true}),
			op(1, 5, 100, Input{Kind: Settle, Client: "b", Ref: 3}, Output{Unknown: true}),
			op(2, 10, 11, read, seen(Holder{"b", 7})),
			op(2, 12, 13, read, seen()),
			op(0, 14, 15, acq("a", 6), Output{Token: 9}),
		}, true},
		{"a failed acquire's grant with a token below an earlier one", []porcupine.Operation{
			op(0, 0, 1, acq("a", 1), Output{Token: 5}),
			op(0, 2, 3, rel("a", 5), Output{}),
			op(1, 4, 100, acq("b", 3), Output{Unknown: true}),
			op(2, 10, 11, read, seen(Holder{"b", 4})),
		}, false},
		{"a failed release may take effect", []porcupine.Operation{
			op(0, 0, 1, acq("a", 1), Output{Token: 5}),
			op(0, 2, 100, rel("a", 5), Output{Unknown: true}),
			op(1, 4, 5, read, seen(Holder{"a", 5})),
			op(1, 6, 7, read, seen()),
		}, true},
		{"a release of a grant not held", []porcupine.Operation{
			op(0, 0, 1, rel("a", 5), Output{}),
		}, false},
		{"a refusal to the holder itself", []porcupine.Operation{
			op(0, 0, 1, acq("a", 1), Output{Token: 5}),
			op(1, 2, 3, Input{Kind: TryAcquire, Client: "a", ID: 2}, Output{Refused: true}),
		}, false},
		{"a refusal to another caller of the holder's client", []porcupine.Operation{
			op(0, 0, 1, Input{Kind: Acquire, Client: "a", Worker: "a/0", ID: 1}, Output{Token: 5}),
			op(1, 2, 3, Input{Kind: TryAcquire, Client: "a", Worker: "a/1", ID: 2}, Output{Refused: true}),
		}, true},
		{"a refusal to a caller whose failed acquire may hold the name", []porcupine.Operation{
			op(0, 0, 10, Input{Kind: Acquire, Client: "a", Worker: "a/0", ID: 1}, Output{Unknown: true}),
			op(0, 11, 12, Input{Kind: TryAcquire, Client: "a", Worker: "a/0", ID: 2}, Output{Refused: true, Local: true}),
			op(1, 13, 14, read, seen(Holder{"a", 5})),
		}, true},
		{"a refusal to a lone client whose failed acquire may hold the name", []porcupine.Operation{
			op(0, 0, 10, Input{Kind: Acquire, Client: "a", ID: 1}, Output{Unknown: true}),
			op(0, 11, 12, Input{Kind: TryAcquire, Client: "a", ID: 2}, Output{Refused: true}),
			op(1, 13, 14, read, seen(Holder{"a", 5})),
		}, false},
		{"a refusal to the holding caller itself", []porcupine.Operation{
			op(0, 0, 1, Input{Kind: Acquire, Client: "a", Worker: "a/0", ID: 1}, Output{Token: 5}),
			op(0, 2, 3, Input{Kind: TryAcquire, Client: "a", Worker: "a/0", ID: 2}, Output{Refused: true}),
		}, false},
	}
}

func TestSemaphoreModel(t *testing.T) {
	two := []porcupine.Operation{
		op(0, 0, 1, acq("a", 1), Output{Token: 5}),
		op(1, 0, 1, acq("b", 2), Output{Token: 6}),
		op(2, 2, 3, read, seen(Holder{"b", 6}, Holder{"a", 5})),
		op(2, 4, 5, Input{Kind: TryAcquire, Client: "c", ID: 4}, Output{Refused: true}),
	}
	if res, _ := Check(SemaphoreModel(2), two, 10*time.Second); res != porcupine.Ok {
		t.Fatalf("two permits of two: %s", res)
	}
	if res, _ := Check(SemaphoreModel(3), two, 10*time.Second); res == porcupine.Ok {
		t.Fatal("a refusal with a third permit free was accepted")
	}
	third := append(two[:2:2], op(2, 2, 3, acq("c", 3), Output{Token: 7}))
	if res, _ := Check(SemaphoreModel(2), third, 10*time.Second); res == porcupine.Ok {
		t.Fatal("three holders of two permits were accepted")
	}
	phantoms := []porcupine.Operation{
		op(0, 0, 50, acq("a", 1), Output{Unknown: true}),
		op(1, 0, 50, acq("a", 2), Output{Unknown: true}),
		op(2, 10, 11, acq("b", 3), Output{Token: 8}),
		op(2, 20, 21, read, seen(Holder{"a", 9}, Holder{"b", 8})),
	}
	if res, _ := Check(SemaphoreModel(3), phantoms, 10*time.Second); res != porcupine.Ok {
		t.Fatalf("a phantom granted after b's grant: %s", res)
	}
	phantoms[3] = op(2, 20, 21, read, seen(Holder{"a", 2}, Holder{"a", 9}, Holder{"b", 8}))
	if res, _ := Check(SemaphoreModel(3), phantoms, 10*time.Second); res != porcupine.Ok {
		t.Fatalf("two phantoms around b's grant: %s", res)
	}
}

// settledFailure returns a recorder on a clock that ticks at every reading,
// holding worker's failed acquire of "x" by client "a" (ticks 1 and 2) and
// its settlement (tick 3).
func settledFailure(worker string) (*Recorder, *Call) {
	var now int64
	r := NewRecorder(func() int64 { now++; return now })
	failed := r.Begin(worker, Input{Kind: Acquire, Name: "x", Client: "a"})
	failed.Fail()
	r.Settle(worker, failed)
	return r, failed
}

// TestRecorderBounds: a failed acquire returns, in the history, when the
// client's next known acquire of the name returns; without a later one,
// after everything else; Settle and Lost are unknown from their call.
func TestRecorderBounds(t *testing.T) {
	r, failed := settledFailure("w0") // calls 1, 2, 3
	next := r.Begin("w0", Input{Kind: TryAcquire, Name: "x", Client: "a"})
	next.End(Output{Refused: true}) // 4, 5
	other := r.Begin("w1", Input{Kind: Acquire, Name: "x", Client: "b"})
	other.Fail() // 6, 7
	ops := r.Finish(LeaseBounds)
	if len(ops) != 4 {
		t.Fatalf("%d operations", len(ops))
	}
	if ops[0].Return != 5 || ops[1].Return != 5 {
		t.Fatalf("failed acquire and its settlement return at %d and %d, want 5 (the next acquire's return)", ops[0].Return, ops[1].Return)
	}
	if ops[3].Return <= 7 {
		t.Fatalf("an unbounded failure returns at %d, want after everything", ops[3].Return)
	}
	if in := ops[1].Input.(Input); in.Kind != Settle || in.Ref != failed.ID() {
		t.Fatalf("settlement recorded as %+v", in)
	}
	if s := Count(ops); s.Operations != 4 || s.Failed != 3 || s.Refused != 1 || s.Settles != 1 {
		t.Fatalf("counts %+v", s)
	}
}

// TestRecorderLocalRefusalBoundsNothing: a refusal the client gave itself
// (another of its callers holds the name) asked the cluster nothing, so it
// does not bound the client's earlier failed acquire or its settlement;
// the next known acquire that did ask does.
func TestRecorderLocalRefusalBoundsNothing(t *testing.T) {
	r, _ := settledFailure("a/0") // calls 1, 2, 3
	local := r.Begin("a/1", Input{Kind: TryAcquire, Name: "x", Client: "a"})
	local.End(Output{Refused: true, Local: true}) // 4, 5
	asked := r.Begin("a/1", Input{Kind: TryAcquire, Name: "x", Client: "a"})
	asked.End(Output{Refused: true}) // 6, 7
	ops := r.Finish(LeaseBounds)
	if ops[0].Return != 7 || ops[1].Return != 7 {
		t.Fatalf("failed acquire and its settlement return at %d and %d, want 7 (the next acquire that asked)", ops[0].Return, ops[1].Return)
	}
}

// fakeTB records what Verify reports.
type fakeTB struct {
	failed string
}

func (f *fakeTB) Helper()                   {}
func (f *fakeTB) Logf(string, ...any)       {}
func (f *fakeTB) Errorf(s string, a ...any) { f.failed = s }

// TestVerifyWritesVisualization: a rejected history fails the test and
// leaves porcupine's HTML where HOLDFAST_LIN_OUT points.
func TestVerifyWritesVisualization(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(OutDirEnv, dir)
	bad := []porcupine.Operation{
		op(0, 0, 1, acq("a", 1), Output{Token: 5}),
		op(0, 2, 3, rel("a", 5), Output{}),
		op(1, 4, 5, read, seen(Holder{"a", 5})),
	}
	tb := &fakeTB{}
	if Verify(tb, "lease", LeaseModel(), bad, 10*time.Second, 42) || tb.failed == "" {
		t.Fatal("a rejected history passed")
	}
	if _, err := os.Stat(filepath.Join(dir, "lease-seed42.html")); err != nil {
		t.Fatalf("no visualization: %v", err)
	}
	back, err := Load(filepath.Join(dir, "lease-seed42.json"))
	if err != nil {
		t.Fatalf("the saved history: %v", err)
	}
	if !reflect.DeepEqual(back, bad) {
		t.Fatalf("saved history read back as %+v, want %+v", back, bad)
	}
}

// TestRecorderReplaced: an acquire granted after its client's session was
// replaced while it waited may have been granted to the old session first;
// a read during the call that saw that grant (a token the caller never
// got) is explained, but not a read after the call returned, nor one that
// shows the old grant as someone else's.
func TestRecorderReplaced(t *testing.T) {
	history := func(readAt int64, who string) []porcupine.Operation {
		var now int64
		r := NewRecorder(func() int64 { return now })
		read := func() {
			now = readAt
			rd := r.Begin("reader", Input{Kind: Read, Name: "x"})
			now++
			rd.End(Output{Holders: []Holder{{Client: who, Token: 5}}})
		}
		now = 10
		call := r.Begin("a", Input{Kind: Acquire, Name: "x", Client: "a"})
		if readAt < 30 {
			read()
		}
		now = 30
		call.End(Output{Token: 9})
		r.Replaced("a", call)
		if readAt > 30 {
			read()
		}
		return r.Finish(LeaseBounds)
	}
	if res := checkLease(history(20, "a")); res != porcupine.Ok {
		t.Fatalf("a read during the call of the replaced session's grant: %v, want ok", res)
	}
	if res := checkLease(history(40, "a")); res != porcupine.Illegal {
		t.Fatalf("a read after the call returned of a grant older than the one returned: %v, want illegal", res)
	}
	if res := checkLease(history(20, "b")); res != porcupine.Illegal {
		t.Fatalf("a read during the call of another client's grant nobody asked for: %v, want illegal", res)
	}
	if s := Count(history(20, "a")); s.Settles != 1 || s.Failed != 2 {
		t.Fatalf("counts %+v, want the possible grant and its settlement", s)
	}
}

// TestRecorderReplacedRefused: a TryAcquire refused after its client's
// session was replaced while it waited may, like an acquire, have been
// granted to the replaced session first (simulation seed 23147: readers saw
// that grant during the call); with Replaced the history is linearizable,
// without it a read of the client's grant during a refused call is not.
func TestRecorderReplacedRefused(t *testing.T) {
	history := func(replaced bool) []porcupine.Operation {
		var now int64 = 10
		r := NewRecorder(func() int64 { return now })
		call := r.Begin("a", Input{Kind: TryAcquire, Name: "x", Client: "a"})
		now = 20
		rd := r.Begin("reader", Input{Kind: Read, Name: "x"})
		now = 21
		rd.End(Output{Holders: []Holder{{Client: "a", Token: 5}}})
		now = 25
		b := r.Begin("b", Input{Kind: Acquire, Name: "x", Client: "b"})
		now = 28
		b.End(Output{Token: 7})
		now = 30
		call.End(Output{Refused: true})
		if replaced {
			r.Replaced("a", call)
		}
		return r.Finish(LeaseBounds)
	}
	needsReplaced(t, history, "the replaced session's grant read during a refused call")
}

// TestRecorderReplacedFailed: an acquire that fails (its context ended)
// after its client's session was replaced may have been granted twice: to
// the old session, which lapsed, and, asked again for the new session, to
// the new one, settled once the call had given up (the long run's seed
// 78,661: reads saw the client hold token 709, then another client 716,
// then the first client again with 722, all from one failed call). With
// Replaced the history is linearizable; without it two grants of one call
// are not.
func TestRecorderReplacedFailed(t *testing.T) {
	history := func(replaced bool) []porcupine.Operation {
		var now int64 = 10
		r := NewRecorder(func() int64 { return now })
		call := r.Begin("a", Input{Kind: Acquire, Name: "x", Client: "a"})
		read := func(at int64, hs ...Holder) {
			now = at
			rd := r.Begin("reader", Input{Kind: Read, Name: "x"})
			now = at + 1
			rd.End(Output{Holders: hs})
		}
		read(20, Holder{Client: "a", Token: 5}) // the old session's grant
		now = 25
		b := r.Begin("b", Input{Kind: Acquire, Name: "x", Client: "b"})
		now = 28
		b.End(Output{Token: 7})
		now = 29
		rel := r.Begin("b", Input{Kind: Release, Name: "x", Client: "b", Token: 7})
		now = 30
		rel.End(Output{})
		now = 35
		call.Fail()
		r.SettleSince("a", call, 0)
		if replaced {
			r.Replaced("a", call)
		}
		read(40, Holder{Client: "a", Token: 9}) // the new session's, granted after the call gave up
		read(50)
		return r.Finish(LeaseBounds)
	}
	needsReplaced(t, history, "two grants of a failed call whose session was replaced")
}

// checkLease checks ops against the lease model.
func checkLease(ops []porcupine.Operation) porcupine.CheckResult {
	res, _ := Check(LeaseModel(), ops, 10*time.Second)
	return res
}

// needsReplaced checks that history(true), recorded with Replaced, is
// linearizable, and that history(false), the same without it, is not.
func needsReplaced(t *testing.T, history func(replaced bool) []porcupine.Operation, what string) {
	t.Helper()
	if res := checkLease(history(true)); res != porcupine.Ok {
		t.Fatalf("%s, recorded: %v, want ok", what, res)
	}
	if res := checkLease(history(false)); res != porcupine.Illegal {
		t.Fatalf("the same without Replaced: %v, want illegal", res)
	}
}
