package admin

import "time"

// Status is the answer to GET /v1/status: what this node knows of itself
// and of the cluster.
type Status struct {
	// Name is this node's name; ID its identity (and raft server ID).
	Name string `json:"name"`
	ID   string `json:"id"`
	// ClusterID is the formed cluster's ID, or "" before this node has
	// learned it.
	ClusterID  string `json:"cluster_id"`
	RPCAddr    string `json:"rpc_addr"`
	GossipAddr string `json:"gossip_addr"`
	// RaftState is "follower", "candidate", "leader" or "shutdown".
	RaftState string `json:"raft_state"`
	// Leader is the raft leader this node knows of, or nil (JSON null).
	Leader *NodeRef `json:"leader"`
	// Voters lists the voters of the raft configuration, sorted by name
	// then ID.
	Voters []Voter `json:"voters"`
	// NonVoters lists the non-voters of the raft configuration (whether
	// gossip knows them or not), sorted by name then ID; Healthy is nil.
	NonVoters []Voter `json:"non_voters"`
	// Group is the raft group's health as the raft leader last judged it;
	// every node reports the leader's figures (see coordinator.GroupHealth).
	Group GroupHealth `json:"group"`
	// Storage is this node's own raft storage (coordinator.StorageHealth).
	Storage StorageRow `json:"storage"`
	// Members lists every node gossip knows of, sorted by name.
	Members []MemberRow `json:"members"`
	// AppliedIndex is the raft index of the last entry this node's replica
	// applied.
	AppliedIndex uint64 `json:"applied_index"`
	// LastToken is the last fencing token the cluster issued, as this
	// node's replica knows it.
	LastToken uint64 `json:"last_token"`
	// TokenBase is the value the cluster's tokens started above (the
	// creating leader's clock in µs, or Cluster.TokenFloor if higher; 0 for
	// a cluster created by an earlier release): last_token − token_base
	// grants were made since creation.
	TokenBase uint64 `json:"token_base"`
	// ClusterCreated is when the cluster was created, by its creating
	// leader's clock, or nil (JSON null) when not known.
	ClusterCreated *time.Time `json:"cluster_created"`
	// Session is this node's live session, or nil (JSON null).
	Session *SessionRow `json:"session"`
	// Shards is the cluster's shard count (this node's configured count
	// before it has learned the cluster's).
	Shards int `json:"shards"`
	// Ready is true when Coordinator.Ready returns nil; NotReadyReason is
	// its error otherwise, and "" when ready.
	Ready          bool   `json:"ready"`
	NotReadyReason string `json:"not_ready_reason"`
	// Formation says how far this node is in forming or joining a cluster.
	Formation FormationRow `json:"formation"`
	// Placement is the balancer's latest round (each node's load,
	// capacity and target, and the moves it started) on the raft leader;
	// nil (JSON null) on every other node.
	Placement *PlacementRow `json:"placement"`
}

// FormationRow is Coordinator.Formation: how far the answering node is in
// forming or joining a cluster.
type FormationRow struct {
	// Formed is true once the node is a member of a formed cluster.
	Formed bool `json:"formed"`
	// Expect is the node's BootstrapExpect (0: it only joins).
	Expect int `json:"expect"`
	// Seen lists the voter-eligible members gossip shows in no cluster
	// yet (the bootstrap candidates), sorted by name.
	Seen []string `json:"seen"`
	// Progress is one line, such as "bootstrap: 2 of 3 eligible nodes
	// seen (n1, n2)" or "member of cluster ID".
	Progress string `json:"progress"`
}

// NodeRef identifies a node.
type NodeRef struct {
	// Name is "" when this node's gossip does not know the node.
	Name    string `json:"name"`
	ID      string `json:"id"`
	RPCAddr string `json:"rpc_addr"`
}

// Voter is one voter of the raft configuration.
type Voter struct {
	ID string `json:"id"`
	// Name is "" when this node's gossip does not know the voter.
	Name string `json:"name"`
	// Healthy is the raft leader's verdict on the voter, or nil (JSON
	// null) when this node holds no recent verdict on it.
	Healthy *bool `json:"healthy"`
}

// StorageRow is this node's raft storage: its log, term and vote on disk.
type StorageRow struct {
	// OK is false while a write of the log, or of the term and vote, fails
	// (a full disk, a failing device): the node then takes no new session
	// and does not stand for election, and its sessions end by their
	// timers; once writes succeed again it catches up by itself.
	OK bool `json:"ok"`
	// Op is the failing operation ("append", "delete", "stable"), Error its
	// error, Since when it began (null when OK).
	Op    string     `json:"op"`
	Error string     `json:"error"`
	Since *time.Time `json:"since"`
	// RestartNeeded is true once the log refuses every write (a failure it
	// could not undo): only a restart of the node helps.
	RestartNeeded bool `json:"restart_needed"`
	// Errors counts the storage errors since the node started.
	Errors uint64 `json:"errors"`
	// Line is the one-line summary the verbose probes print.
	Line string `json:"line"`
}

// GroupHealth is the raft group's health as the raft leader's autopilot
// last judged it.
type GroupHealth struct {
	// Known is true when the answering node holds a recent judgement (it
	// leads, or the leader's autopilot reached it within about two
	// reconcile intervals); the other fields are the last figures it had.
	Known bool `json:"known"`
	// Degraded is true when the judgement is not known, a voter is
	// unhealthy, or there are fewer voters than wanted.
	Degraded bool `json:"degraded"`
	// FailureTolerance is how many more voters may fail while a quorum of
	// healthy voters remains.
	FailureTolerance int `json:"failure_tolerance"`
	// HealthyVoters, Voters and WantedVoters count the voters the leader
	// judged healthy, the voters it listed and the voters the cluster keeps.
	HealthyVoters int `json:"healthy_voters"`
	Voters        int `json:"voters"`
	WantedVoters  int `json:"wanted_voters"`
	// LeaderID is the raft ID of the judging leader; AgeSeconds how old the
	// judgement is (the last one this node had, when not Known).
	LeaderID   string  `json:"leader_id"`
	AgeSeconds float64 `json:"age_seconds"`
	// UnknownReason says why the judgement is not Known ("" when it is): no
	// raft leader known (the group turns unknown the moment this node
	// loses its leader), no judgement from the leader for a while, or none
	// received yet.
	UnknownReason string `json:"unknown_reason"`
	// Unhealthy lists the unhealthy voters' names (IDs when unnamed).
	Unhealthy []string `json:"unhealthy"`
}

// JudgedAgo is the judgement's age in words, for a status line: "2s ago",
// "<1s ago".
func (g GroupHealth) JudgedAgo() string {
	if g.AgeSeconds < 1 {
		return "<1s ago"
	}
	return (time.Duration(g.AgeSeconds) * time.Second).String() + " ago"
}

// MemberRow describes one node as gossip and raft show it to this node.
type MemberRow struct {
	Name       string `json:"name"`
	ID         string `json:"id"`
	RPCAddr    string `json:"rpc_addr"`
	GossipAddr string `json:"gossip_addr"`
	// State is gossip's view: "alive", "suspect", "failed" or "left".
	State string `json:"state"`
	// Suffrage is "voter", "non-voter", or "none" while the member is not
	// in the raft configuration.
	Suffrage string `json:"suffrage"`
	// Eligible is true when the member has a data dir and may become a
	// voter.
	Eligible bool   `json:"eligible"`
	Zone     string `json:"zone"`
	// Tags are the member's placement tags (Config.Shards.Tags).
	Tags []string `json:"tags"`
	// ClusterID is the cluster the member says it belongs to ("" before it
	// knows).
	ClusterID string `json:"cluster_id"`
	// Since is when State last changed, on the answering node's clock.
	Since time.Time `json:"since"`
}

// SessionRow describes the answering node's live session.
type SessionRow struct {
	ID string `json:"id"`
	// RemainingSeconds is how long the node may still believe in the
	// session without another answered keepalive.
	RemainingSeconds float64 `json:"remaining_seconds"`
	// Drained is true while the node refuses shards (Coordinator.Drain).
	Drained bool `json:"drained"`
}

// ShardList is the answer to GET /v1/shards: one version of the shard
// table.
type ShardList struct {
	// Version is the table version: the raft index of the last command
	// that changed it (0 before the cluster exists).
	Version uint64 `json:"version"`
	// Count is the number of shards in the table, whatever the filter.
	Count int `json:"count"`
	// Stale is true while the answering node knows no raft leader: its
	// replica may miss changes committed since NoLeaderSince (when it
	// last knew one, on its clock; null while a leader is known).
	Stale         bool       `json:"stale"`
	NoLeaderSince *time.Time `json:"no_leader_since"`
	// Shards lists the shards, sorted by shard: all of them, or with
	// ?owner=NAME those whose Owner is NAME (with an empty NAME, the free
	// ones).
	Shards []ShardRow `json:"shards"`
	// Pins lists the operators' shard pins and moves under way, sorted by
	// shard (holdfastctl shards pin, shards move).
	Pins []PinRow `json:"pins"`
	// Rules lists the placement rules, sorted by name (holdfastctl shards
	// rule).
	Rules []RuleRow `json:"rules"`
}

// ShardRow describes one shard.
type ShardRow struct {
	Shard uint32 `json:"shard"`
	// State is "free", "owned" or "revoking" (owned, being handed off).
	State string `json:"state"`
	// Owner is the owning node's name, OwnerID its identity and Addr its
	// service address; all "" while the shard is free.
	Owner   string `json:"owner"`
	OwnerID string `json:"owner_id"`
	Addr    string `json:"addr"`
	// Token is the fencing token of the current grant, or of the last one
	// when the shard is free.
	Token uint64 `json:"token"`
}

// LeaseList is the answer to GET /v1/leases.
type LeaseList struct {
	// Leases lists every held named lease, sorted by name.
	Leases []LeaseRow `json:"leases"`
}

// LeaseRow describes one held named lease.
type LeaseRow struct {
	Name string `json:"name"`
	// Holder is the holding node's name, HolderID its identity and Session
	// the holding session.
	Holder   string `json:"holder"`
	HolderID string `json:"holder_id"`
	Session  string `json:"session"`
	Token    uint64 `json:"token"`
	// Value is the holder value the holder attached to its grant
	// (coordinator.WithValue, Lease.SetValue); "" for none.
	Value string `json:"value"`
	// Waiters is the number of sessions queued for the lease.
	Waiters int `json:"waiters"`
}

// Error is the body of every JSON error answer.
type Error struct {
	Error string `json:"error"`
}

// LeaveRequest is the body of POST /v1/leave: decommission the answering
// node (coordinator.Coordinator.Leave). Confirm must be its name.
type LeaveRequest struct {
	Confirmation
	// Force takes a voter out even when fewer than the cluster's voters
	// would remain and no node can replace it (LeaveOptions.Force).
	Force bool `json:"force"`
}

// LeaveResult answers POST /v1/leave: the node that left (Left true), which
// has stopped. A refusal is an Error with status 409 (too few voters would
// remain, or no quorum to commit), 504 (no raft leader in time) or 503
// (the node is shut down).
type LeaveResult struct {
	Name string `json:"name"`
	ID   string `json:"id"`
	Left bool   `json:"left"`
}
