package session

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestExpiryLogNamesSessionNode: the leader's "expiring session" line
// names the expired session's node under its own key, so a logger that
// already carries this node's name ("node", as the coordinator's does) does
// not print the key twice.
func TestExpiryLogNamesSessionNode(t *testing.T) {
	r := newLessorRig(t, 1)
	var buf bytes.Buffer
	o := r.l.o
	o.Log = slog.New(slog.NewTextHandler(&buf, nil)).With("node", "n1")
	l := NewLessor(o)
	r.rep.create(t, "s1", testTTL)
	l.Activate(r.rep.f.View())
	deadline, _ := l.Deadline("s1")
	r.wall.advance(deadline.Sub(r.wall.Now()))
	l.sync(r.rep.f.View(), r.wall.Now())
	l.expireDue(t.Context(), r.wall.Now())
	line := ""
	for _, s := range strings.Split(buf.String(), "\n") {
		if strings.Contains(s, `msg="expiring session"`) {
			line = s
		}
	}
	if line == "" {
		t.Fatalf("no expiring session line in %q", buf.String())
	}
	if strings.Count(line, " node=") != 1 || !strings.Contains(line, " node=n1 ") || !strings.Contains(line, " session_node=") {
		t.Fatalf("expiry line %q: want node=n1 once and the session's node as session_node", line)
	}
}
