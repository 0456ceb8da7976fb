package transport

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testLogger sends transport logs to t.Log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// newTestTransport starts a Transport on loopback, closed at test end.
func newTestTransport(t testing.TB, id string, h Handler, mod ...func(*Config)) *Transport {
	t.Helper()
	cfg := Config{BindAddr: "127.0.0.1:0", LocalID: id, Handler: h, Logger: testLogger(t)}
	for _, f := range mod {
		f(&cfg)
	}
	tr, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return tr
}

// echo is a handler that returns the request body for method "echo", a
// coded error for "fail", a plain error for "oops", blocks until ctx ends for
// "block" and panics for "panic".
var echo = HandlerFunc(func(ctx context.Context, method string, body []byte) ([]byte, error) {
	switch method {
	case "echo":
		return body, nil
	case "fail":
		return nil, &RemoteError{Code: "not_leader", Message: "leader is n2"}
	case "oops":
		return nil, errors.New("plain failure")
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	case "panic":
		panic("boom")
	}
	return nil, &RemoteError{Code: "unknown_method", Message: method}
})
