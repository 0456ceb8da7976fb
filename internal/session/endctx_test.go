package session

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

type ctxKey struct{}

var errMine = errors.New("mine")

// newTestBelief returns a belief under a fresh session whose context
// carries a value, and the session.
func newTestBelief(t *testing.T) (*Belief, *Session) {
	t.Helper()
	parent := context.WithValue(context.Background(), ctxKey{}, "v")
	s := New(parent, "s", time.Hour, &testkit.Clock{}, time.Hour)
	t.Cleanup(func() { s.End(ErrExpired) })
	return NewBelief(s), s
}

// made reports whether the belief's context made its real child.
func made(b *Belief) bool {
	b.ctx.mu.Lock()
	defer b.ctx.mu.Unlock()
	return b.ctx.real != nil
}

// closed waits up to 10s for ch to close.
func closed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s not closed after 10s", what)
	}
}

// TestEndCtxLazy: a belief's context makes no channel and no child of the
// session's until someone waits on it; Err, Value and Cause of a live
// belief make none.
func TestEndCtxLazy(t *testing.T) {
	b, _ := newTestBelief(t)
	ctx := b.Context()
	if ctx.Err() != nil || context.Cause(ctx) != nil || b.Cause() != nil || ctx.Value(ctxKey{}) != "v" {
		t.Fatalf("live belief: Err %v, Cause %v, value %v", ctx.Err(), context.Cause(ctx), ctx.Value(ctxKey{}))
	}
	if made(b) {
		t.Fatal("Err, Cause or Value made the real context")
	}
	done := ctx.Done()
	if !made(b) || done == nil || ctx.Done() != done {
		t.Fatalf("Done: made %v, channel %v, same channel on the second call %v", made(b), done, ctx.Done() == done)
	}
	select {
	case <-done:
		t.Fatal("Done closed while the belief holds")
	default:
	}
}

// TestEndCtxEndsWithCause: End ends the context with its cause, whether
// the channel was made before or after, and whether or not a cause was
// asked before the real context exists; the session's later end changes
// nothing.
func TestEndCtxEndsWithCause(t *testing.T) {
	for _, early := range []bool{false, true} {
		b, s := newTestBelief(t)
		ctx := b.Context()
		var done <-chan struct{}
		if early {
			done = ctx.Done()
		}
		if !b.End(errMine, time.Time{}, nil) {
			t.Fatal("End of a live belief reported false")
		}
		if b.Cause() != errMine || made(b) != early {
			t.Fatalf("early %v: Cause %v (want %v), real context made %v", early, b.Cause(), errMine, made(b))
		}
		s.End(ErrExpired)
		if !errors.Is(ctx.Err(), context.Canceled) || context.Cause(ctx) != errMine || b.Cause() != errMine {
			t.Fatalf("early %v: Err %v, Cause %v; want Canceled, %v", early, ctx.Err(), context.Cause(ctx), errMine)
		}
		if !early {
			done = ctx.Done()
		}
		closed(t, done, "Done")
		if ctx.Value(ctxKey{}) != "v" || b.EndedAt().IsZero() {
			t.Fatalf("early %v: value %v, EndedAt %v after End", early, ctx.Value(ctxKey{}), b.EndedAt())
		}
	}
}

// TestEndCtxEndsWithSession: the session's end ends the context with the
// session's cause, at once for Err and Cause, and closes a channel made
// before or after it; a later End changes nothing.
func TestEndCtxEndsWithSession(t *testing.T) {
	for _, early := range []bool{false, true} {
		b, s := newTestBelief(t)
		ctx := b.Context()
		var done <-chan struct{}
		if early {
			done = ctx.Done()
		}
		s.End(ErrExpired)
		if ctx.Err() == nil || context.Cause(ctx) != ErrExpired || b.Cause() != ErrExpired {
			t.Fatalf("early %v: Err %v, Cause %v; want %v", early, ctx.Err(), context.Cause(ctx), ErrExpired)
		}
		if !early {
			done = ctx.Done()
		}
		closed(t, done, "Done")
		ran := false
		if b.End(errMine, time.Time{}, func() { ran = true }) || !ran {
			t.Fatalf("early %v: End after the session's end reported true or did not run after (%v)", early, ran)
		}
		if context.Cause(ctx) != ErrExpired || !b.EndedAt().IsZero() {
			t.Fatalf("early %v: after End, Cause %v, EndedAt %v; want %v, zero", early, context.Cause(ctx), b.EndedAt(), ErrExpired)
		}
	}
}

// TestEndCtxDerived: contexts derived from a live belief's (WithCancel,
// WithTimeout, AfterFunc) end with it and see its cause, without a
// goroutine each; a derived context cancelled first leaves the belief
// alone; AfterFunc's f runs once, however the belief ends after.
func TestEndCtxDerived(t *testing.T) {
	b, s := newTestBelief(t)
	ctx := b.Context()
	before := runtime.NumGoroutine()
	const n = 50
	kids := make([]context.Context, 0, 2*n)
	var cancels []context.CancelFunc
	for range n {
		k, cancel := context.WithCancel(ctx)
		kids = append(kids, k)
		cancels = append(cancels, cancel)
		k, cancel = context.WithTimeout(ctx, time.Hour)
		kids = append(kids, k)
		cancels = append(cancels, cancel)
	}
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	var runs atomic.Int32
	ran := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		if runs.Add(1) == 1 {
			close(ran)
		}
	})
	// A context package that could not see the belief's context as a
	// cancel context would start a goroutine per derived context; allow a
	// few goroutines of the runtime or of earlier tests to come and go.
	if g := runtime.NumGoroutine(); g-before >= n/2 {
		t.Fatalf("deriving %d contexts started %d goroutines", 2*n+1, g-before)
	}
	lone, cancelLone := context.WithCancel(ctx)
	cancelLone()
	if lone.Err() == nil || ctx.Err() != nil {
		t.Fatalf("cancelling a derived context: its Err %v, the belief's %v", lone.Err(), ctx.Err())
	}
	b.End(errMine, time.Time{}, nil)
	for i, k := range kids {
		if k.Err() == nil || context.Cause(k) != errMine {
			t.Fatalf("derived context %d: Err %v, Cause %v; want %v", i, k.Err(), context.Cause(k), errMine)
		}
	}
	closed(t, ran, "AfterFunc")
	s.End(ErrExpired)
	b.End(errMine, time.Time{}, nil)
	if stop() || runs.Load() != 1 {
		t.Fatalf("AfterFunc: stop %v after it ran, %d runs; want false, 1", stop(), runs.Load())
	}
}

// TestEndCtxAfterEnd: a context derived from, or an AfterFunc on, a belief
// that already ended ends at once with its cause.
func TestEndCtxAfterEnd(t *testing.T) {
	b, _ := newTestBelief(t)
	b.End(errMine, time.Time{}, nil)
	k, cancel := context.WithCancel(b.Context())
	defer cancel()
	if context.Cause(k) != errMine {
		t.Fatalf("derived after the end: Cause %v, want %v", context.Cause(k), errMine)
	}
	ran := make(chan struct{})
	context.AfterFunc(b.Context(), func() { close(ran) })
	closed(t, ran, "AfterFunc")
}

// TestEndCtxRace: ends by End and by the session race readers of the
// context (run with -race); the cause is one of the two and every reader
// agrees on it at the end.
func TestEndCtxRace(t *testing.T) {
	for range 100 {
		b, s := newTestBelief(t)
		ctx := b.Context()
		var wg sync.WaitGroup
		wg.Add(4)
		go func() { defer wg.Done(); b.End(errMine, time.Time{}, nil) }()
		go func() { defer wg.Done(); s.End(ErrExpired) }()
		go func() { defer wg.Done(); <-ctx.Done() }()
		go func() { defer wg.Done(); _ = context.Cause(ctx); _ = b.Cause(); _ = b.Observe() }()
		wg.Wait()
		c := context.Cause(ctx)
		if (c != errMine && c != ErrExpired) || b.Cause() != c {
			t.Fatalf("cause %v, Belief.Cause %v", c, b.Cause())
		}
		if k, cancel := context.WithCancel(ctx); context.Cause(k) != c {
			cancel()
			t.Fatalf("derived after the race: cause %v, want %v", context.Cause(k), c)
		} else {
			cancel()
		}
	}
}
