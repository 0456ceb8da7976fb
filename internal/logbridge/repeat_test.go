package logbridge

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// recordLog is a slog handler that keeps every record.
type recordLog struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *recordLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordLog) WithGroup(string) slog.Handler      { return h }

// levels returns the level of each record with message msg, and the
// "repeated" attribute of each (0 when absent).
func (h *recordLog) levels(msg string) (levels []slog.Level, repeated []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.recs {
		if r.Message != msg {
			continue
		}
		levels = append(levels, r.Level)
		var n int64
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "repeated" {
				n = a.Value.Int64()
			}
			return true
		})
		repeated = append(repeated, n)
	}
	return levels, repeated
}

// TestRepeatedPeerErrorsLoggedOnce feeds the bridge raft's heartbeat
// storm for an unreachable peer (as raft logs it: an error per failed
// heartbeat, with a changing backoff and error): within RepeatWindow only
// the first is an error, the rest are debug records; after the window the
// next is an error again and counts the repeats in between. Another peer,
// and records naming no peer, are not held back.
func TestRepeatedPeerErrorsLoggedOnce(t *testing.T) {
	h := &recordLog{}
	clk := testkit.NewClock(time.Unix(1000, 0))
	hl := newHCLog(slog.New(h), "raft", nil, clk.Time)
	const msg = "failed to heartbeat to"
	for i := range 50 {
		hl.Error(msg, "peer", "10.0.0.3:7947", "backoff time", time.Duration(i)*time.Millisecond,
			"error", errors.New("dial tcp 10.0.0.3:7947: connect: connection refused"))
		clk.Advance(200 * time.Millisecond) // 10 s in all
	}
	hl.Error(msg, "peer", "10.0.0.4:7947", "backoff time", time.Millisecond, "error", errors.New("i/o timeout"))
	for range 3 {
		hl.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "10.0.0.9:7947", "last-leader-id", "lost")
	}
	clk.Advance(RepeatWindow)
	hl.Error(msg, "peer", "10.0.0.3:7947", "backoff time", time.Millisecond, "error", errors.New("connection refused"))

	levels, repeated := h.levels(msg)
	if len(levels) != 52 {
		t.Fatalf("%d records, want 52 (every record kept, some at debug)", len(levels))
	}
	loud := 0
	for _, l := range levels {
		if l == slog.LevelError {
			loud++
		}
	}
	if loud != 3 {
		t.Errorf("%d records at error level, want 3 (first for each peer, then one after the window): %v", loud, levels)
	}
	if levels[0] != slog.LevelError || levels[1] != slog.LevelDebug || levels[50] != slog.LevelError {
		t.Errorf("levels %v: want the first record per peer at error, repeats at debug", levels)
	}
	if levels[51] != slog.LevelError || repeated[51] != 49 {
		t.Errorf("after the window: level %v, repeated %d; want error and 49", levels[51], repeated[51])
	}
	if el, _ := h.levels("heartbeat timeout reached, starting election"); len(el) != 3 || el[2] != slog.LevelWarn {
		t.Errorf("records naming no peer: %v, want 3 warnings", el)
	}
}
