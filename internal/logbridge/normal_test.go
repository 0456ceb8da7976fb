package logbridge

import (
	"log/slog"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// TestNormalStartNotWarned: raft's "no known peers, aborting election"
// and a first "heartbeat timeout reached, starting election" (no leader
// ever known) are steps of every normal start, logged at info level; the
// heartbeat timeout after a known leader is lost stays a warning.
func TestNormalStartNotWarned(t *testing.T) {
	h := &recordLog{}
	clock := testkit.NewClock(time.Unix(1000, 0))
	log := newHCLog(slog.New(h), "raft", nil, clock.Time)
	log.Warn("no known peers, aborting election")
	log.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "", "last-leader-id", "")
	log.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "127.0.0.1:7947", "last-leader-id", "x")
	if lv, _ := h.levels("no known peers, aborting election"); len(lv) != 1 || lv[0] != slog.LevelInfo {
		t.Errorf("no known peers: levels %v, want [INFO]", lv)
	}
	lv, _ := h.levels("heartbeat timeout reached, starting election")
	if len(lv) != 2 || lv[0] != slog.LevelInfo || lv[1] != slog.LevelWarn {
		t.Errorf("heartbeat timeout: levels %v, want [INFO WARN] (first start, then a lost leader)", lv)
	}
}
