package coordinator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// semRefusals returns the state machine's refusals of a full semaphore's
// try-acquire and of an acquire with another limit.
func semRefusals(t *testing.T) (full, limit error) {
	t.Helper()
	f := fsm.New()
	index := uint64(0)
	apply := func(cmd fsm.Command) fsm.Result {
		data, err := fsm.Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		index++
		r, _ := f.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}).(fsm.Result)
		return r
	}
	apply(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: "s1", Node: "n1", NodeID: "i1", TTLNanos: int64(time.Minute)}})
	if r := apply(fsm.Command{Op: fsm.OpSemAcquire, Sem: &fsm.SemCmd{Name: "s", Session: "s1", Request: 1, Limit: 1}}); r.Err != nil {
		t.Fatalf("first acquire: %v", r.Err)
	}
	full = apply(fsm.Command{Op: fsm.OpSemAcquire, Sem: &fsm.SemCmd{Name: "s", Session: "s1", Request: 2, Limit: 1}}).Err
	limit = apply(fsm.Command{Op: fsm.OpSemAcquire, Sem: &fsm.SemCmd{Name: "s", Session: "s1", Request: 3, Limit: 3}}).Err
	if !errors.Is(full, fsm.ErrSemFull) || !errors.Is(limit, fsm.ErrSemLimit) {
		t.Fatalf("state machine refusals %v and %v", full, limit)
	}
	return full, limit
}

// TestForwardedSemaphoreRefusalKeepsItsKind: a semaphore refusal a
// follower gets back from the leader over the network is ErrSemaphoreFull
// or ErrSemaphoreLimit (and ErrRejected) with the same message as on the
// leader itself, carried by its own wire code rather than by its text.
func TestForwardedSemaphoreRefusalKeepsItsKind(t *testing.T) {
	full, limit := semRefusals(t)
	var refusal error
	leader, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	d := wire.NewDispatcher(nil)
	d.Handle(wire.MethodApply, raftnode.ServeForwards(raftnode.ForwardOptions{Limit: 1,
		Apply: func(context.Context, []byte) (wire.ApplyResult, error) {
			return wire.ApplyResult{}, wire.Wrap(wire.ErrRejected, refusal) // as ApplyLocal returns it
		}}))
	leader.SetHandler(transport.HandlerFunc(d.ServeRPC))
	follower, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	semError := func(err error) error { return leases.SemError(err, ErrSemaphoreFull, ErrSemaphoreLimit) }
	for _, tc := range []struct {
		fsmErr, want error
		code         string
	}{{full, ErrSemaphoreFull, wire.CodeSemFull}, {limit, ErrSemaphoreLimit, wire.CodeSemLimit}} {
		refusal = tc.fsmErr
		raw := follower.Call(ctx, leader.Addr(), wire.MethodApply, wire.ApplyRequest{Data: []byte{1}}, nil)
		var re *transport.RemoteError
		if !errors.As(raw, &re) || re.Code != tc.code {
			t.Fatalf("the leader answered %v, want code %q", raw, tc.code)
		}
		got := semError(wire.FromRemote(raw))
		local := semError(wire.Wrap(wire.ErrRejected, tc.fsmErr))
		if !errors.Is(got, tc.want) || !errors.Is(got, wire.ErrRejected) {
			t.Errorf("forwarded refusal %q: not %q and ErrRejected", got, tc.want)
		}
		if got.Error() != local.Error() {
			t.Errorf("forwarded refusal reads %q, on the leader %q", got, local)
		}
	}
}
