package wire

// The operator's shard placement actions (OperateRequest.Action, with
// OperateRequest.Shard). A leader of an earlier release refuses them as
// unknown actions.
const (
	ActionShardPin   = "shard-pin"
	ActionShardUnpin = "shard-unpin"
	ActionShardMove  = "shard-move"
	ActionShardPlan  = "shard-plan"
	// ActionShardRule sets the placement rule named by Target to
	// OperateRequest.Rule; ActionShardUnrule removes it.
	ActionShardRule   = "shard-rule"
	ActionShardUnrule = "shard-unrule"
)

// PlanReply is the leader's preview of its balancer's next round
// (OperateReply.Plan for ActionShardPlan).
type PlanReply struct {
	// AtNanos is the instant planned for, in Unix nanoseconds.
	AtNanos int64      `msgpack:"at"`
	ByLoad  bool       `msgpack:"by_load,omitempty"`
	Nodes   []PlanNode `msgpack:"nodes"`
	Moves   []PlanMove `msgpack:"moves"`
	Unowned int        `msgpack:"unowned,omitempty"`
	Waiting string     `msgpack:"waiting,omitempty"` // why the round would not plan ("" when it would)
	// Unplaceable are the shards no node may own under the placement
	// rules; UnplaceableWaiting those only a node not eligible yet may.
	Unplaceable        []uint32 `msgpack:"unplaceable,omitempty"`
	UnplaceableWaiting []uint32 `msgpack:"unplaceable_waiting,omitempty"`
}

// PlanNode is one session's line of a PlanReply.
type PlanNode struct {
	Node        string  `msgpack:"node"`
	Session     string  `msgpack:"session"`
	Capacity    float64 `msgpack:"capacity"`
	Shards      int     `msgpack:"shards"`
	Planned     int     `msgpack:"planned"`
	Load        float64 `msgpack:"load"`
	PlannedLoad float64 `msgpack:"planned_load"`
	Target      float64 `msgpack:"target"`
	Eligible    bool    `msgpack:"eligible,omitempty"`
	Stuck       bool    `msgpack:"stuck,omitempty"`
}

// PlanMove is one grant or handoff of a PlanReply.
type PlanMove struct {
	Shard  uint32 `msgpack:"shard"`
	From   string `msgpack:"from,omitempty"`
	To     string `msgpack:"to"`
	Reason string `msgpack:"reason"`
}

// PlanPinnedShard is one pin the plan honoured.
type PlanPinnedShard struct {
	Shard uint32 `msgpack:"shard"`
	Node  string `msgpack:"node"`
	Once  bool   `msgpack:"once,omitempty"`
}
