package raftnode

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// forwards is a leader's forwarding handler behind a dispatcher, with a
// fake apply.
type forwards struct {
	d       *wire.Dispatcher
	metrics *Metrics
	applied atomic.Int64
}

func newForwards(limit int, apply func(ctx context.Context, data []byte) (wire.ApplyResult, error)) *forwards {
	f := &forwards{metrics: NewMetrics()}
	f.d = wire.NewDispatcher(nil)
	f.d.Handle(wire.MethodApply, ServeForwards(ForwardOptions{Limit: limit, Metrics: f.metrics,
		Apply: func(ctx context.Context, data []byte) (wire.ApplyResult, error) {
			f.applied.Add(1)
			return apply(ctx, data)
		}}))
	return f
}

// forward sends a command with budget as a follower would, and decodes
// the answer as it does.
func (f *forwards) forward(t *testing.T, budget time.Duration) (wire.ApplyResult, error) {
	t.Helper()
	body, err := transport.Encode(wire.ApplyRequest{Data: []byte("cmd"), BudgetNanos: int64(budget)})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := f.d.ServeRPC(context.Background(), wire.MethodApply, body)
	if err != nil {
		return wire.ApplyResult{}, wire.FromRemote(err)
	}
	var res wire.ApplyResult
	if err := transport.Decode(raw, &res); err != nil {
		t.Fatal(err)
	}
	return res, nil
}

// TestForwardPastItsBudgetIsDropped: a command whose budget ran out before
// the leader could propose it is answered busy and never applied; one
// within its budget is applied under a deadline no later than the budget.
func TestForwardPastItsBudgetIsDropped(t *testing.T) {
	var deadline time.Duration
	f := newForwards(4, func(ctx context.Context, _ []byte) (wire.ApplyResult, error) {
		dl, ok := ctx.Deadline()
		if !ok {
			t.Error("a command with a budget was applied without a deadline")
		}
		deadline = time.Until(dl)
		return wire.ApplyResult{Index: 7, Token: 3}, nil
	})
	if _, err := f.forward(t, time.Nanosecond); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("a command past its budget: %v, want ErrBusy", err)
	}
	if n := f.applied.Load(); n != 0 {
		t.Fatalf("a command past its budget was applied (%d)", n)
	}
	if got := testutil.ToFloat64(f.metrics.expired); got != 1 {
		t.Fatalf("expired counter %v, want 1", got)
	}
	res, err := f.forward(t, time.Hour)
	if err != nil || res.Index != 7 || res.Token != 3 || f.applied.Load() != 1 {
		t.Fatalf("a command within its budget: %+v, %v (%d applied)", res, err, f.applied.Load())
	}
	if deadline > time.Hour {
		t.Fatalf("applied with %v left, more than its budget", deadline)
	}
	if got := testutil.ToFloat64(f.metrics.expired); got != 1 {
		t.Fatalf("expired counter %v after a command in budget, want 1", got)
	}
}

// TestForwardWithoutBudgetHasNoDeadline: budget 0 means the sender waits
// without a bound; the leader does not invent one.
func TestForwardWithoutBudgetHasNoDeadline(t *testing.T) {
	f := newForwards(1, func(ctx context.Context, _ []byte) (wire.ApplyResult, error) {
		if _, ok := ctx.Deadline(); ok {
			t.Error("a command without a budget got a deadline")
		}
		return wire.ApplyResult{Index: 1}, nil
	})
	if _, err := f.forward(t, 0); err != nil || f.applied.Load() != 1 {
		t.Fatalf("%v, %d applied", err, f.applied.Load())
	}
}

// TestForwardsBeyondTheLimitAreRefused: with Limit commands waiting for
// their commit, one more is refused busy without being applied, and
// counted; once one finishes, the next is served.
func TestForwardsBeyondTheLimitAreRefused(t *testing.T) {
	const limit = 3
	entered := make(chan struct{})
	release := make(chan struct{})
	f := newForwards(limit, func(ctx context.Context, _ []byte) (wire.ApplyResult, error) {
		entered <- struct{}{}
		<-release
		return wire.ApplyResult{Index: 1}, nil
	})
	done := make(chan error, limit+1)
	for range limit {
		go func() {
			_, err := f.forward(t, 0)
			done <- err
		}()
		<-entered
	}
	over := make(chan error, 1)
	go func() {
		_, err := f.forward(t, 0)
		over <- err
	}()
	select {
	case err := <-over:
		if !errors.Is(err, wire.ErrBusy) {
			t.Fatalf("forward %d of limit %d: %v, want ErrBusy", limit+1, limit, err)
		}
	case <-entered:
		close(release)
		for range limit {
			<-done
		}
		<-over
		t.Fatalf("forward %d of limit %d was applied", limit+1, limit)
	}
	if got := testutil.ToFloat64(f.metrics.refused); got != 1 {
		t.Fatalf("refused counter %v, want 1", got)
	}
	if n := f.applied.Load(); n != limit {
		t.Fatalf("%d applied, want %d (the refused one must not be)", n, limit)
	}
	release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := f.forward(t, 0)
		done <- err
	}()
	<-entered // served: a slot was free again
	close(release)
	for range limit {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestForwardWithAcceptIsAnsweredOnceTakenIn: a forwarded command that asks
// for Accept is handed to Submit and answered Accepted at once, without
// Apply; without a Submit the leader commits it and answers as usual.
func TestForwardWithAcceptIsAnsweredOnceTakenIn(t *testing.T) {
	apply := func(context.Context, []byte) (wire.ApplyResult, error) { return wire.ApplyResult{Index: 9}, nil }
	send := func(d *wire.Dispatcher) wire.ApplyResult {
		t.Helper()
		body, err := transport.Encode(wire.ApplyRequest{Data: []byte("cmd"), Accept: true})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := d.ServeRPC(context.Background(), wire.MethodApply, body)
		if err != nil {
			t.Fatal(err)
		}
		var res wire.ApplyResult
		if err := transport.Decode(raw, &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	var submitted, applied atomic.Int64
	d := wire.NewDispatcher(nil)
	d.Handle(wire.MethodApply, ServeForwards(ForwardOptions{Limit: 1,
		Apply:  func(ctx context.Context, b []byte) (wire.ApplyResult, error) { applied.Add(1); return apply(ctx, b) },
		Submit: func(context.Context, []byte) error { submitted.Add(1); return nil }}))
	if res := send(d); !res.Accepted || submitted.Load() != 1 || applied.Load() != 0 {
		t.Fatalf("with Submit: %+v, %d submitted, %d applied; want Accepted, 1, 0", res, submitted.Load(), applied.Load())
	}
	old := newForwards(1, apply) // a leader without Submit
	if res, _ := old.forward(t, 0); res.Accepted || res.Index != 9 {
		t.Fatalf("without Submit: %+v, want the commit's answer", res)
	}
	if res := send(old.d); res.Accepted || res.Index != 9 {
		t.Fatalf("Accept without Submit: %+v, want the commit's answer", res)
	}
}
