package raftnode

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// refuseOldSnapshot refuses an InstallSnapshot whose snapshot ends below
// the index this node's raft has applied. hashicorp/raft (v1.7.3) installs
// any snapshot a leader of the current term sends: its applied index goes
// back to the snapshot's, while its log may already be compacted past that
// point by a snapshot of its own, and the next commit then panics ("log not
// found") reading an entry the store no longer has, which ends the
// process. A leader that is being deposed, and is behind the follower,
// sends such a snapshot before it learns of its successor: seen at 256
// nodes with every node in raft, a diskless follower that had applied
// 23,465 and compacted its log to 22,810 was sent its old leader's
// snapshot of 18,413. The refusal is an error to the sender, whose raft
// backs off and tries again; a leader that is current and in step never
// sends a snapshot below what its follower applied, and a newer snapshot
// or the entries that follow are taken as usual. A snapshot at exactly
// the applied index is let through (raft restores the same state).
func (t *raftTransport) refuseOldSnapshot(rpc raft.RPC) error {
	req, ok := rpc.Command.(*raft.InstallSnapshotRequest)
	if !ok {
		return nil
	}
	f := t.applied.Load()
	if f == nil {
		return nil
	}
	if applied := (*f)(); req.LastLogIndex < applied {
		return fmt.Errorf("raftnode: refusing a snapshot up to index %d (term %d): this node has applied up to %d",
			req.LastLogIndex, req.LastLogTerm, applied)
	}
	return nil
}
