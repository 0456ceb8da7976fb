package raftnode

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/transport"
)

// leaderHint is the raft leader as a node outside the raft configuration
// (a replica fed by package feed) last heard it from its feed server, and
// until when that word holds.
type leaderHint struct {
	mu    sync.Mutex
	addr  raft.ServerAddress
	id    raft.ServerID
	until time.Time
}

// SetLeaderHint records that the leader is the node with raft ID id at RPC
// address rpcAddr ("" for none), as a feed server reported it; the word
// holds for ttl, unless renewed. Raft's own knowledge, when it has any,
// wins. It reports whether the leader known through the hint changed.
func (n *Node) SetLeaderHint(rpcAddr, id string, ttl time.Duration) bool {
	h := &n.hint
	h.mu.Lock()
	defer h.mu.Unlock()
	var addr raft.ServerAddress
	if rpcAddr != "" && id != "" {
		addr = transport.RaftAddress(rpcAddr, id)
	}
	changed := addr != h.addr || time.Now().After(h.until)
	h.addr, h.id, h.until = addr, raft.ServerID(id), time.Now().Add(ttl)
	return changed
}

// LeaderWithID returns the raft leader's raft address and ID as raft
// knows them, or else as the leader hint gives them while it holds ("" when
// neither knows one).
func (n *Node) LeaderWithID() (raft.ServerAddress, raft.ServerID) {
	if a, id := n.raft.LeaderWithID(); a != "" {
		return a, id
	}
	h := &n.hint
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.addr == "" || time.Now().After(h.until) {
		return "", ""
	}
	return h.addr, h.id
}

// Notify tells whoever waits on Changed that the leader changed (seen by
// the watch's raft observer, or learnt by a replica outside raft from its
// feed), and records whether one is known.
func (w *LeaderWatch) Notify(known bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case known:
		w.since = time.Time{}
	case w.since.IsZero():
		w.since = time.Now()
	}
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}
