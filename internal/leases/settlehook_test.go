package leases

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// hookKey marks the contexts of the acquires a hookLog follows.
type hookKey struct{}

// hookLog records what the settle hook is told, for acquires whose
// context carries hookKey.
type hookLog struct {
	mu    sync.Mutex
	calls []hookCall
	ended chan hookCall // each settlement's end, once
}

type hookCall struct {
	tag       string
	name      string
	req       uint64
	committed bool
}

func newHookLog(h *harness) *hookLog {
	l := &hookLog{ended: make(chan hookCall, 16)}
	h.part.SetSettleHook(func(ctx context.Context, name string, req uint64) func(bool) {
		tag, _ := ctx.Value(hookKey{}).(string)
		l.mu.Lock()
		l.calls = append(l.calls, hookCall{tag: tag, name: name, req: req})
		l.mu.Unlock()
		return func(committed bool) { l.ended <- hookCall{tag: tag, name: name, req: req, committed: committed} }
	})
	return l
}

// next returns the next settlement's end the hook was told of.
func (l *hookLog) next(t *testing.T) hookCall {
	t.Helper()
	select {
	case c := <-l.ended:
		return c
	case <-time.After(waitFor):
		t.Fatalf("no settlement ended within %v; the hook was told %+v", waitFor, l.told())
		return hookCall{}
	}
}

func (l *hookLog) told() []hookCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]hookCall(nil), l.calls...)
}

func tagged(tag string) (context.Context, context.CancelFunc) {
	return context.WithCancel(context.WithValue(context.Background(), hookKey{}, tag))
}

// The settle hook is told of a cancelled acquire's settlement, with the
// acquire's context and request, before the acquire returns, and then of
// the settlement's commit; at that point the replica has the request given
// up.
func TestSettleHookToldOfTheCommit(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			l := newHookLog(h)
			ctx, cancel := tagged("a")
			defer cancel()
			h.mu.Lock()
			h.cancel = cancel
			h.mu.Unlock()
			releases := 0
			h.setFault(func(cmd fsm.Command) fault {
				switch {
				case isAcquire(cmd):
					return cancelAfter
				case isRelease(cmd):
					if releases++; releases == 1 {
						return drop // the first attempt is lost
					}
				}
				return pass
			})
			if _, err := h.part.Acquire(ctx, req(k, "x", true)); !errors.Is(err, context.Canceled) {
				t.Fatalf("acquire: %v, want context.Canceled", err)
			}
			want := hookCall{tag: "a", name: "x", req: h.reqSeq.Load()}
			if got := l.told(); len(got) != 1 || got[0] != want {
				t.Fatalf("hook told %+v before the acquire returned, want [%+v]", got, want)
			}
			end := l.next(t)
			if want.committed = true; end != want {
				t.Fatalf("settlement ended %+v, want %+v", end, want)
			}
			if err := free(h.lead.View(), k, "x"); err != nil {
				t.Fatalf("after the commit was told: %v", err)
			}
		})
	}
}

// A caller that stops waiting for its local turn asked the cluster
// nothing: the hook is told so (request 0) and its end comes at once,
// committed.
func TestSettleHookToldOfNothingAsked(t *testing.T) {
	h := newHarness(t)
	l := newHookLog(h)
	a := h.acquire(req(Lease, "x", true))
	defer a.Release(context.Background())
	ctx, cancel := tagged("waiter")
	waiter := h.acquireAsync(ctx, "x")
	h.waitLocalWaiters("x", 1)
	cancel()
	if got := <-waiter; !errors.Is(got.err, context.Canceled) {
		t.Fatalf("the waiter: %v, %v", got.g, got.err)
	}
	want := hookCall{tag: "waiter", name: "x", committed: true}
	if end := l.next(t); end != want {
		t.Fatalf("hook ended %+v, want %+v", end, want)
	}
}

// A turn a handover made for a caller that stopped waiting is disposed of:
// the hook is told of its settlement with that caller's context and the
// request the handover made.
func TestSettleHookToldOfADisposedTurn(t *testing.T) {
	h := newHarness(t)
	l := newHookLog(h)
	a := h.acquire(req(Lease, "x", true))
	ctx, giveUp := tagged("quitter")
	defer giveUp()
	h.handOverToAQuitter(ctx, giveUp, a)
	end := l.next(t)
	if end.tag != "quitter" || end.name != "x" || end.req == 0 || end.req == a.Request() || !end.committed {
		t.Fatalf("hook ended %+v, want the quitter's request made by the handover, committed", end)
	}
	if err := free(h.lead.View(), Lease, "x"); err != nil {
		t.Fatalf("after the commit was told: %v", err)
	}
}

// A Release whose outcome is unknown as its context ends goes on in the
// background: the hook is told, with the Release's context and the grant's
// request, and then of the commit, after which the grant is gone.
func TestSettleHookToldOfARelease(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			h := newHarness(t)
			l := newHookLog(h)
			g := h.acquire(req(k, "x", true))
			ctx, cancel := tagged("release")
			defer cancel()
			releases := 0
			h.setFault(func(cmd fsm.Command) fault {
				if isRelease(cmd) {
					if releases++; releases == 1 {
						cancel() // the caller gives up while its release is lost
						return drop
					}
				}
				return pass
			})
			if err := g.Release(ctx); err == nil {
				t.Fatal("a release lost as its context ended returned nil")
			}
			want := hookCall{tag: "release", name: "x", req: g.Request(), committed: true}
			if end := l.next(t); end != want {
				t.Fatalf("hook ended %+v, want %+v", end, want)
			}
			if err := free(h.lead.View(), k, "x"); err != nil {
				t.Fatalf("after the commit was told: %v", err)
			}
		})
	}
}
