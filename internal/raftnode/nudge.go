package raftnode

import (
	"context"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
)

// Commits that hand a grant to a waiter reach the followers at once.
//
// hashicorp/raft tells followers a new commit index only with its next
// AppendEntries; when no new entries follow a commit, the leader sends that
// message after a random timeout of one to two CommitTimeouts. A request
// queued on a follower learns of its grant only from its own replica, so a
// release that hands a lease to a waiter on another node would reach that
// waiter only then. After such a commit the leader appends a barrier (a log
// entry the state machine never sees): its replication carries the new
// commit index to every follower within one round trip. Nudges coalesce:
// one barrier is in flight at a time, and the nudges asked for meanwhile
// make one more.

// viewer is the state machine's view, when it has one (an *fsm.FSM).
type viewer interface{ View() *fsm.View }

// maybeNudge asks for a barrier after the leader committed data, if the
// command may have handed a grant to a waiter on another node.
func (n *Node) maybeNudge(data []byte) {
	if !n.handsOver(data) {
		return
	}
	select {
	case n.nudgeCh <- struct{}{}:
	default: // one is already asked for
	}
}

// handsOver reports whether the committed command data may have granted a
// waiter of another node: a lease release whose lease now has a holder on
// another node, a permit release that leaves holders of another session,
// or a session's end.
func (n *Node) handsOver(data []byte) bool {
	vw, ok := n.opts.FSM.(viewer)
	if !ok {
		return false
	}
	if len(data) < 2 || data[0] != fsm.CommandVersion {
		return false
	}
	switch fsm.Op(data[1]) { // the op, without decoding the body
	case fsm.OpSessionClose, fsm.OpSessionExpire:
		return true
	case fsm.OpRelease, fsm.OpSemRelease:
	default:
		return false
	}
	cmd, err := fsm.Decode(data)
	if err != nil {
		return false
	}
	switch cmd.Op {
	case fsm.OpRelease:
		_, _, nodeID, _, held := vw.View().HolderNode(cmd.Lease.Name)
		return held && nodeID != n.opts.ID
	case fsm.OpSemRelease:
		s, ok := vw.View().Semaphore(cmd.Sem.Name)
		if !ok {
			return false
		}
		for _, h := range s.Holders {
			if h.Session != cmd.Sem.Session {
				return true
			}
		}
	}
	return false
}

// nudgeLoop appends a barrier for every nudge asked for, one at a time,
// until the host's context ends.
func (n *Node) nudgeLoop() {
	for {
		select {
		case <-n.opts.Context.Done():
			return
		case <-n.nudgeCh:
		}
		if n.raft.State() != raft.Leader {
			continue
		}
		ctx, cancel := context.WithTimeout(n.opts.Context, n.opts.RPCTimeout)
		_, err := Issue(ctx, n.opts.Futures, func() raft.Future { return n.raft.Barrier(n.opts.RPCTimeout) })
		cancel()
		if err != nil {
			n.log.Debug("a barrier to carry the commit index to the followers failed", "error", err)
		}
		n.nudges.Add(1)
	}
}

// Nudges returns how many barriers this node appended to carry a commit
// index to its followers.
func (n *Node) Nudges() int64 { return n.nudges.Load() }
