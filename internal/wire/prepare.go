package wire

import "github.com/holdfast-go/holdfast/fsm"

// MethodShardPrepare asks the target of planned shard moves, from the
// leader, to prepare the shards (ShardPrepareRequest → ShardPrepareReply),
// or to drop prepares the plan no longer wants (Abandon). A node that does
// not know the method answers CodeBadMethod: the leader then moves the
// shards unprepared.
const MethodShardPrepare = "shard.prepare"

// ShardPrepareRequest is MethodShardPrepare's request.
type ShardPrepareRequest struct {
	// To is the session the moves target; a node whose session it is not
	// refuses the request.
	To string `msgpack:"to"`
	// Items are the shards, each with its current owner's session and
	// token.
	Items []fsm.ShardItem `msgpack:"items"`
	// WaitNanos bounds the wait for the shards to be ready.
	WaitNanos int64 `msgpack:"wait"`
	// Abandon asks the node to drop the prepares of Items instead.
	Abandon bool `msgpack:"abandon,omitempty"`
}

// ShardPrepareReply is MethodShardPrepare's answer.
type ShardPrepareReply struct {
	// Ready is how many of the items were ready when the node answered.
	Ready int `msgpack:"ready"`
}
