package transport

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestGossipOnRPCPortHint sends the first byte of a memberlist stream (a
// compressed push/pull: a join) to the RPC port: the refusal's warning
// names the likely mistake; another unknown byte gets no such hint.
func TestGossipOnRPCPortHint(t *testing.T) {
	var logs syncBuffer
	tr := newTestTransport(t, "id-a", echo, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	sendRaw(t, tr.Addr(), []byte{9, 0, 0, 0}, true)
	sendRaw(t, tr.Addr(), []byte{'Z'}, true)
	var hinted, plain int
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, "unknown connection kind") {
			continue
		}
		if strings.Contains(line, "join list instead of a gossip address") {
			hinted++
		} else {
			plain++
		}
	}
	if hinted != 1 || plain != 1 {
		t.Errorf("%d hinted and %d plain refusals, want 1 and 1:\n%s", hinted, plain, logs.String())
	}
}
