package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestTogetherJoinsEveryDuty(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var done atomic.Int32
	side := func(ctx context.Context) { <-ctx.Done(); done.Add(1) }
	Together(ctx, side, side, func(context.Context) { cancel() }) // the last ends the others' ctx
	if n := done.Load(); n != 2 {
		t.Errorf("Together returned with %d of 2 side duties done", n)
	}
	Together(ctx) // nothing to run
}

func TestUntil(t *testing.T) {
	calls := 0
	stopped, err := Until(context.Background(), nil, time.Millisecond, func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if stopped || err != nil || calls != 3 {
		t.Errorf("Until = %v, %v after %d calls; want false, nil after 3", stopped, err, calls)
	}
	notYet := errors.New("not yet")
	stop := make(chan struct{})
	close(stop)
	if stopped, err := Until(context.Background(), stop, time.Hour, func() error { return notYet }); !stopped || err != notYet {
		t.Errorf("Until after stop = %v, %v; want true, the last error", stopped, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if stopped, err := Until(ctx, nil, time.Hour, func() error { return notYet }); stopped || !errors.Is(err, notYet) ||
		!errors.Is(err, context.Canceled) {
		t.Errorf("Until after ctx = %v, %v; want false, the last error with ctx's", stopped, err)
	}
}

func TestRegisterAndUnregister(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "lifecycle_test_total", Help: "A test counter."})
	dup := prometheus.NewCounter(prometheus.CounterOpts{Name: "lifecycle_test_total", Help: "A test counter."})
	r := Register(slog.New(slog.DiscardHandler), reg, []prometheus.Collector{c}, []prometheus.Collector{dup}) // dup is refused
	if len(r.cols) != 1 {
		t.Fatalf("registered %d collectors, want 1", len(r.cols))
	}
	r.Unregister()
	if err := reg.Register(c); err != nil {
		t.Errorf("the collector is still registered after Unregister: %v", err)
	}
	Register(nil, nil, []prometheus.Collector{c}).Unregister() // no registry: nothing
	(*Registered)(nil).Unregister()
}
