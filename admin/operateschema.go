package admin

// The bodies of the operator actions (POST /v1/drain, /v1/undrain,
// /v1/leases/release, /v1/raft/step-down, /v1/raft/remove-peer) and the
// answer of GET /v1/semaphores.

// DrainRequest is the body of POST /v1/drain and POST /v1/undrain: drain
// (or undrain) node Node, given by name or ID, which need not be the
// answering node. Confirm is the answering node's name.
type DrainRequest struct {
	Confirmation
	Node string `json:"node"`
}

// ReleaseLeaseRequest is the body of POST /v1/leases/release: end the
// current grant of lease Name.
type ReleaseLeaseRequest struct {
	Confirmation
	Name string `json:"name"`
}

// StepDownRequest is the body of POST /v1/raft/step-down: the raft leader
// hands leadership to another voter.
type StepDownRequest struct {
	Confirmation
}

// RemovePeerRequest is the body of POST /v1/raft/remove-peer: take server
// Node (a name or raft ID) out of the raft configuration. Force removes a
// node gossip shows alive; nothing removes one whose removal would leave
// the voters without a quorum.
type RemovePeerRequest struct {
	Confirmation
	Node  string `json:"node"`
	Force bool   `json:"force"`
}

// OperationResult answers the operator actions: what the raft leader did
// (coordinator.OperationResult). A refusal is an Error with status 409,
// and nothing changed.
type OperationResult struct {
	Action string `json:"action"`
	Target string `json:"target"`
	// Leader and LeaderID name the raft leader that carried it out (and
	// logged it, with who asked).
	Leader   string `json:"leader"`
	LeaderID string `json:"leader_id"`
	// Node and NodeID name the node acted on, or the new raft leader after
	// a step-down.
	Node   string `json:"node"`
	NodeID string `json:"node_id"`
	// Token is the grant a lease release ended; Graceful is true when its
	// holder's node ended its belief and released it itself, false when
	// the leader committed the release without it.
	Token    uint64 `json:"token"`
	Graceful bool   `json:"graceful"`
	// Promoted is the voter promoted in a removed voter's place ("" for
	// none).
	Promoted string `json:"promoted"`
	// Message says in one line what was done.
	Message string `json:"message"`
}

// SemaphoreList is the answer to GET /v1/semaphores.
type SemaphoreList struct {
	// Semaphores lists every semaphore with a holder or a waiter, sorted
	// by name.
	Semaphores []SemaphoreRow `json:"semaphores"`
}

// SemaphoreRow describes one semaphore.
type SemaphoreRow struct {
	Name string `json:"name"`
	// Limit is its number of permits.
	Limit int `json:"limit"`
	// Holders hold its permits, in grant (token) order.
	Holders []PermitRow `json:"holders"`
	// Waiters is the number of requests queued for a permit.
	Waiters int `json:"waiters"`
}

// PermitRow is one held permit of a semaphore.
type PermitRow struct {
	Holder   string `json:"holder"`
	HolderID string `json:"holder_id"`
	Session  string `json:"session"`
	Token    uint64 `json:"token"`
}
