package holdfasttest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// testHandler writes slog records to t.Log until the cluster closes.
type testHandler struct {
	t      testing.TB
	level  slog.Level
	closed *atomic.Bool
	mu     *sync.Mutex
	attrs  []slog.Attr
}

func newTestLogger(t testing.TB, closed *atomic.Bool, mu *sync.Mutex) *slog.Logger {
	level := slog.LevelWarn
	switch strings.ToLower(os.Getenv("HOLDFAST_TEST_LOG")) {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "error":
		level = slog.LevelError
	}
	return slog.New(&testHandler{t: t, level: level, closed: closed, mu: mu})
}

func (h *testHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *testHandler) Handle(_ context.Context, r slog.Record) error {
	if h.closed.Load() {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", r.Time.Format("15:04:05.000"), r.Level, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed.Load() {
		h.t.Log(b.String())
	}
	return nil
}

func (h *testHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &n
}

func (h *testHandler) WithGroup(string) slog.Handler { return h }
