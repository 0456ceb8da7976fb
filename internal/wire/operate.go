package wire

// MethodOperate carries an operator's action (OperateRequest →
// OperateReply): to the raft leader, which logs it with who asked and
// carries it out, and from the leader to the node an action is about (a
// drain, a lease release) with Local set.
const MethodOperate = "admin.operate"

// The operator actions (OperateRequest.Action).
const (
	ActionDrain        = "drain"
	ActionUndrain      = "undrain"
	ActionReleaseLease = "release-lease"
	ActionStepDown     = "step-down"
	ActionRemovePeer   = "remove-peer"
)

// OperateRequest is an operator's action.
type OperateRequest struct {
	Action string `msgpack:"action"`
	// Target is the node (name or ID) of a drain, undrain or remove-peer,
	// or the lease name of a release-lease; "" for a step-down.
	Target string `msgpack:"target,omitempty"`
	// Force, on remove-peer, removes a node gossip shows alive.
	Force bool `msgpack:"force,omitempty"`
	// By says who asked (a client certificate's name, a remote address),
	// Via which node's admin endpoint took the request.
	By  string `msgpack:"by,omitempty"`
	Via string `msgpack:"via,omitempty"`
	// Local asks the receiving node to act on itself (the leader's
	// request to the node the action is about); Token is then the grant a
	// release-lease names.
	Local bool   `msgpack:"local,omitempty"`
	Token uint64 `msgpack:"token,omitempty"`
	// Shard is the shard of a shard-pin, shard-unpin or shard-move
	// (Target is then the node, by name).
	Shard uint32 `msgpack:"shard,omitempty"`
	// Rule is a shard-rule's rule, "FIRST-LAST:TAG[,TAG...]" (Target is
	// then the rule's name).
	Rule string `msgpack:"rule,omitempty"`
}

// OperateReply answers MethodOperate. Refused is why the action was not
// carried out ("" when it was); nothing changed then.
type OperateReply struct {
	Refused string `msgpack:"refused,omitempty"`
	// Leader names the raft leader that carried the action out.
	Leader   string `msgpack:"leader,omitempty"`
	LeaderID string `msgpack:"leader_id,omitempty"`
	// Node and NodeID name the node acted on (drain, undrain,
	// remove-peer), or the new raft leader after a step-down.
	Node   string `msgpack:"node,omitempty"`
	NodeID string `msgpack:"node_id,omitempty"`
	// Token is the grant a release-lease ended; Graceful is true when its
	// holder's node ended its belief and released it, false when the
	// leader committed the release without it.
	Token    uint64 `msgpack:"token,omitempty"`
	Graceful bool   `msgpack:"graceful,omitempty"`
	// Promoted is the voter promoted in a removed voter's place ("" for
	// none).
	Promoted string `msgpack:"promoted,omitempty"`
	// Message says in one line what was done.
	Message string `msgpack:"message,omitempty"`
	// Plan is the answer of a shard-plan.
	Plan *PlanReply `msgpack:"plan,omitempty"`
}
