package feed

import "errors"

// Method is the RPC method of a pull (PullRequest → PullReply).
const Method = "feed.pull"

// ErrNotServing: the node asked does not serve the feed (it is not in the
// raft configuration, or its replica has no cluster yet).
var ErrNotServing = errors.New("holdfast: node does not serve the replica feed")

// ErrSnapshotGone: the snapshot a replica was reading in chunks is no
// longer held by the server; the replica starts over.
var ErrSnapshotGone = errors.New("holdfast: feed snapshot no longer held")

// PullRequest asks a server for what follows a replica's index.
type PullRequest struct {
	Name string // the replica's node name (logs)
	// From is the replica's applied index: the reply carries commands
	// above it.
	From uint64
	// SnapIndex, when not zero, continues reading the snapshot at that
	// index from byte SnapOffset.
	SnapIndex  uint64
	SnapOffset uint64
}

// Entry is one applied command and its raft index.
type Entry struct {
	Index uint64
	Term  uint64
	Data  []byte
}

// SnapChunk is a piece of the server's snapshot at Index, of Total bytes.
type SnapChunk struct {
	Index  uint64
	Offset uint64
	Total  uint64
	Data   []byte
}

// PullReply is a server's answer: commands above the request's From, in
// index order (none when the poll timed out), or a snapshot chunk; and
// the raft leader as the server knows it.
type PullReply struct {
	LeaderAddr string // the leader's RPC address ("" when unknown)
	LeaderID   string
	Index      uint64 // the server's applied index when it answered
	Entries    []Entry
	Snap       *SnapChunk
}
