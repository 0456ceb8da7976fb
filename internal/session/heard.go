package session

import "time"

// HeardWithin reports whether, while this node leads, a keepalive from the
// node with the given raft ID arrived within d before now and was answered
// (or NoteHeard recorded it): the node reaches the leader over RPC whatever
// gossip says of it.
func (l *Lessor) HeardWithin(nodeID string, d time.Duration, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.heard[nodeID]
	return ok && now.Sub(t) < d
}

// NoteHeard records, while the lessor is active, that the node with the
// given raft ID reached this leader over RPC at t (an answered stats poll);
// it does nothing while inactive.
func (l *Lessor) NoteHeard(nodeID string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.heard != nil && t.After(l.heard[nodeID]) {
		l.heard[nodeID] = t
	}
}

// Answered reports whether, since this lessor last became active, it
// answered a keepalive of session id: the session's node is alive and
// believes in it. A session whose create committed after its caller gave
// up never sends one. The balancer gives shards only to answered sessions.
func (l *Lessor) Answered(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.answered[id]
}

// AnsweredChanged returns a channel closed when the lessor next answers
// the first keepalive of a session (see Answered).
func (l *Lessor) AnsweredChanged() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.firstHeard
}
