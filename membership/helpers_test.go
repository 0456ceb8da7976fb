package membership

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/leaktest"
)

// TestMain checks for leaked goroutines, giving memberlist's probe
// goroutines (which wait out their probe timeout after Shutdown) time to end.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, 10*time.Second)
}

// waitTimeout bounds every wait; generous for a loaded 2-core machine.
const waitTimeout = 45 * time.Second

// testLogHandler sends records to t.Log until the test ends.
type testLogHandler struct {
	mu      *sync.Mutex
	stopped *bool
	t       testing.TB
	attrs   []slog.Attr
}

func newTestLogger(t testing.TB) *slog.Logger {
	h := &testLogHandler{mu: new(sync.Mutex), stopped: new(bool), t: t}
	t.Cleanup(func() {
		h.mu.Lock()
		*h.stopped = true
		h.mu.Unlock()
	})
	return slog.New(h)
}

func (h *testLogHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *testLogHandler) Handle(_ context.Context, r slog.Record) error {
	s := fmt.Sprintf("%s %s", r.Level, r.Message)
	for _, a := range h.attrs {
		s += " " + a.String()
	}
	r.Attrs(func(a slog.Attr) bool { s += " " + a.String(); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	if !*h.stopped {
		h.t.Log(s)
	}
	return nil
}

func (h *testLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clone(h.attrs), as...)
	return &c
}

func (h *testLogHandler) WithGroup(string) slog.Handler { return h }

// startNode starts a Local-profile node on 127.0.0.1:0; it is shut down when
// the test ends.
func startNode(t *testing.T, name string, tweak ...func(*Config)) *Membership {
	t.Helper()
	cfg := Config{
		NodeName: name,
		BindAddr: "127.0.0.1:0",
		Profile:  Local,
		Meta:     Meta{NodeID: "id-" + name, RPCAddr: "127.0.0.1:1" + name[len(name)-1:], Voter: true},
		Logger:   newTestLogger(t).With(slog.String("node", name)),
	}
	for _, f := range tweak {
		f(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	t.Cleanup(func() {
		if err := m.Shutdown(); err != nil {
			t.Errorf("Shutdown(%s): %v", name, err)
		}
	})
	return m
}

func join(t *testing.T, m *Membership, seeds ...*Membership) {
	t.Helper()
	addrs := make([]string, len(seeds))
	for i, s := range seeds {
		addrs[i] = s.Addr()
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := m.Join(ctx, addrs); err != nil {
		t.Fatalf("%s: Join: %v", m.Local().Name, err)
	}
}

// memberIs checks that m sees name in state st.
func memberIs(m *Membership, name string, st State) error {
	mb, ok := m.Member(name)
	if !ok {
		return fmt.Errorf("%s does not know %s", m.Local().Name, name)
	}
	if mb.State != st {
		return fmt.Errorf("%s sees %s %v, want %v", m.Local().Name, name, mb.State, st)
	}
	return nil
}

// allAlive checks that each node sees exactly the given names, all alive.
func allAlive(nodes []*Membership, names ...string) error {
	for _, m := range nodes {
		ms := m.Members()
		if len(ms) != len(names) {
			return fmt.Errorf("%s sees %d members, want %d: %v", m.Local().Name, len(ms), len(names), ms)
		}
		for _, n := range names {
			if err := memberIs(m, n, Alive); err != nil {
				return err
			}
		}
	}
	return nil
}

// recorder collects a node's events until its Events channel closes.
type recorder struct {
	mu     sync.Mutex
	events []Event
	done   chan struct{}
}

func record(m *Membership) *recorder {
	r := &recorder{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for e := range m.Events() {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		}
	}()
	return r
}

// has checks that an event of kind about name matching ok was recorded.
func (r *recorder) has(kind EventKind, name string, ok func(Member) bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Kind == kind && e.Member.Name == name && (ok == nil || ok(e.Member)) {
			return nil
		}
	}
	return fmt.Errorf("no %v event for %s among %d events", kind, name, len(r.events))
}
