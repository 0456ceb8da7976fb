package wire

// IdentityReply is a node's answer to MethodIdentity.
type IdentityReply struct {
	// NodeID is the node's identity (its raft server ID).
	NodeID string `msgpack:"id"`
	// ClusterID is the cluster the node's data dir belongs to, or the one
	// its replica shows; "" for a node in no cluster yet.
	ClusterID string `msgpack:"cluster,omitempty"`
}

// StatsReply is a node's raft progress (MethodStats).
type StatsReply struct {
	LastContactNs int64  `msgpack:"contact"` // -1: never
	LastTerm      uint64 `msgpack:"term"`
	LastIndex     uint64 `msgpack:"index"`
}

// ApplyRequest is a command forwarded to the leader (MethodApply).
type ApplyRequest struct {
	Data []byte `msgpack:"data"`
	// BudgetNanos is how long the sender still waited for the answer when
	// it sent the request (a duration, not a deadline: clocks differ); 0
	// means unbounded. The leader drops the command unapplied once that
	// much time has passed since the request reached it.
	BudgetNanos int64 `msgpack:"budget,omitempty"`
	// Accept asks the leader to answer as soon as raft has taken the
	// command in, before it commits (ApplyResult.Accepted). A leader that
	// does not know the field answers after the commit, as for any command.
	Accept bool `msgpack:"accept,omitempty"`
}

// ApplyResult is what a committed command returned (the reply to
// MethodApply, and the result of applying a command locally).
type ApplyResult struct {
	Index   uint64 `msgpack:"index"`
	Token   uint64 `msgpack:"token"`
	Holder  string `msgpack:"holder"`
	Request uint64 `msgpack:"req"`
	Queued  bool   `msgpack:"queued"`
	Noop    bool   `msgpack:"noop"`
	Stale   bool   `msgpack:"stale,omitempty"`
	Count   int    `msgpack:"count"`
	// Accepted answers ApplyRequest.Accept: raft on the leader has taken
	// the command in, ahead of every command that reaches the leader after
	// this answer, and it has not committed yet; the other fields are
	// empty.
	Accepted bool `msgpack:"accepted,omitempty"`
}

// RemoveRequest asks the leader to remove server ID (MethodRemove).
type RemoveRequest struct {
	ID string `msgpack:"id"`
}

// LeaveRequest asks the leader to decommission server ID (MethodLeave):
// remove it from the raft configuration, after promoting a replacement
// when it is a voter and the configuration would otherwise hold fewer than
// the cluster's Voters. Force removes it even when no replacement exists
// (never below a quorum of live voters); DryRun only checks and changes
// nothing.
type LeaveRequest struct {
	ID     string `msgpack:"id"`
	Force  bool   `msgpack:"force,omitempty"`
	DryRun bool   `msgpack:"dry_run,omitempty"`
}

// LeaveReply answers MethodLeave: the ID of the server promoted in the
// leaver's place ("" for none), and whether the leaver is out of the
// configuration now (false after a dry run).
type LeaveReply struct {
	Promoted string `msgpack:"promoted,omitempty"`
	Removed  bool   `msgpack:"removed,omitempty"`
}

// SyncReply answers MethodSync.
type SyncReply struct {
	// Index is the raft index of the last command the leader had committed
	// when the request arrived, confirmed by a quorum.
	Index uint64 `msgpack:"index"`
}

// KeepAliveRequest renews Session (MethodKeepAlive). Shards and Loads,
// optional, carry the smoothed load of shards the sender owns, pairwise
// (Loads[i] is the load of Shards[i]): the leader keeps them in memory for
// placement and never commits them. A leader of an earlier release ignores
// them, and one of this release reads their absence as no report.
type KeepAliveRequest struct {
	Session string    `msgpack:"session"`
	Shards  []uint32  `msgpack:"shards,omitempty"`
	Loads   []float32 `msgpack:"loads,omitempty"`
}

// KeepAliveReply answers MethodKeepAlive.
type KeepAliveReply struct {
	// Index is the leader's applied index when it answered.
	Index uint64 `msgpack:"index"`
}

// ConfirmRequest asks the voter with raft server ID ID whether its
// current term is Term (MethodConfirm). ID is empty only from a release
// that did not send it.
type ConfirmRequest struct {
	Term uint64 `msgpack:"term"`
	ID   string `msgpack:"id,omitempty"`
}

// ConfirmReply answers MethodConfirm: OK while the voter's current term is
// the one asked about and the voter is the one asked for; ID is the raft
// server ID of the node that answered (empty from a release that did not
// send it).
type ConfirmReply struct {
	OK bool   `msgpack:"ok"`
	ID string `msgpack:"id,omitempty"`
}

// KeyringRequest asks a node to apply Op (a Keyring* constant) with Key to
// its gossip keyring (MethodGossipKeyring).
type KeyringRequest struct {
	Op  string `msgpack:"op"`
	Key []byte `msgpack:"key"`
}

// KeyringReply describes the node's keyring after the operation, relative
// to the request's key. It never carries key material.
type KeyringReply struct {
	Installed bool `msgpack:"installed"`
	Primary   bool `msgpack:"primary"`
	Keys      int  `msgpack:"keys"`
}

// BootServer is one server of a bootstrap proposal.
type BootServer struct {
	Name string `msgpack:"name"`
	ID   string `msgpack:"id"`
	Addr string `msgpack:"addr"`
}

// BootProposal is a proposal to bootstrap raft with Servers, made by node
// By (the request of the MethodBootstrap* methods).
type BootProposal struct {
	ID      string       `msgpack:"id"`
	By      string       `msgpack:"by"`
	Servers []BootServer `msgpack:"servers"`
	// ClusterID is the ID of the cluster the proposal creates: every node
	// records it in its data dir when it bootstraps, before its first raft
	// message, and the first leader's InitCluster carries it. "" from a
	// release before it: the first leader makes one.
	ClusterID string `msgpack:"cluster,omitempty"`
}

// BootReply answers the MethodBootstrap* methods: OK, or why not.
type BootReply struct {
	OK     bool   `msgpack:"ok"`
	Reason string `msgpack:"reason"`
}

// StatsRequest is autopilot's stats poll (MethodStats); it carries the
// leader's health judgement (nil before the leader has one). Older leaders
// send an empty request, which decodes to a nil Health.
type StatsRequest struct {
	Health *HealthReport `msgpack:"health,omitempty"`
}

// HealthReport is the leader's judgement of the raft group's health, as
// sent to every voter.
type HealthReport struct {
	Term             uint64        `msgpack:"term"`
	Leader           string        `msgpack:"leader"`
	FailureTolerance int           `msgpack:"ft"`
	Voters           []VoterReport `msgpack:"voters"`
}

// VoterReport is one voter in a HealthReport.
type VoterReport struct {
	ID      string `msgpack:"id"`
	Name    string `msgpack:"name"`
	Zone    string `msgpack:"zone"`
	Healthy bool   `msgpack:"healthy"`
}

// WaitGrantRequest asks for the grant of a queued request (MethodWaitGrant):
// request Request of session Session for the named lease (or semaphore),
// as shown in a replica at or past index After (the acquire that queued it).
type WaitGrantRequest struct {
	Semaphore bool   `msgpack:"sem,omitempty"`
	Name      string `msgpack:"name"`
	Session   string `msgpack:"session"`
	Request   uint64 `msgpack:"req"`
	After     uint64 `msgpack:"after"`
	// WaitNanos is the longest the node waits before it answers that the
	// grant has not come (a duration: clocks differ).
	WaitNanos int64 `msgpack:"wait"`
}

// WaitGrantReply answers a WaitGrantRequest: Granted with the grant's token
// and the index of a replica view that shows it, or not granted (yet).
type WaitGrantReply struct {
	Granted bool   `msgpack:"granted"`
	Token   uint64 `msgpack:"token,omitempty"`
	Index   uint64 `msgpack:"index,omitempty"`
}
