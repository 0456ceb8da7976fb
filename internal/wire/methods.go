package wire

// RPC method names. They are part of the wire protocol.
const (
	// MethodStats asks a node for its raft progress (StatsReply), for
	// autopilot's health view.
	MethodStats = "raft.stats"
	// MethodApply forwards a command to the raft leader (ApplyRequest →
	// ApplyResult).
	MethodApply = "raft.apply"
	// MethodRemove asks the leader to remove a server (RemoveRequest).
	MethodRemove = "raft.remove"
	// MethodLeave asks the leader to take a server out of the raft
	// configuration for good, promoting a replacement first when one is
	// needed and possible (LeaveRequest → LeaveReply); refusals are
	// CodeLeaveRefused.
	MethodLeave = "raft.leave"
	// MethodSync asks the leader for a read index (SyncReply).
	MethodSync = "raft.sync"
	// MethodConfirm asks a voter whether it is still in the leader's term
	// (ConfirmRequest → ConfirmReply).
	MethodConfirm = "raft.confirm"
	// MethodKeepAlive renews a session at the leader (KeepAliveRequest →
	// KeepAliveReply).
	MethodKeepAlive = "session.keepalive"
	// MethodGossipKeyring applies one step of a gossip key rotation on a
	// node (KeyringRequest → KeyringReply).
	MethodGossipKeyring = "gossip.keyring"
	// MethodWaitGrant asks a node (the leader) to answer once its replica
	// shows the grant of a queued lease or permit request, or when the
	// request's wait runs out (WaitGrantRequest → WaitGrantReply).
	MethodWaitGrant = "lease.wait"
	// MethodBootstrapPrepare asks a node to promise itself to a bootstrap
	// proposal (BootProposal → BootReply).
	MethodBootstrapPrepare = "bootstrap.prepare"
	// MethodBootstrapCommit tells a node that promised to bootstrap with the
	// proposal (BootProposal → BootReply).
	MethodBootstrapCommit = "bootstrap.commit"
	// MethodBootstrapAbort releases a node's promise (BootProposal →
	// BootReply).
	MethodBootstrapAbort = "bootstrap.abort"
	// MethodIdentity asks a node which node it is and which cluster its data
	// dir belongs to (no request body → IdentityReply). It is served to
	// callers of any cluster (transport.Config.AnyCluster): a leader asks it
	// before adding a node, a node asks it of raft traffic from a server
	// outside its configuration.
	MethodIdentity = "cluster.identity"
)

// AnyClusterMethods are the methods a node serves to callers of another
// cluster than its own.
var AnyClusterMethods = []string{MethodIdentity}

// Remote error codes (transport.RemoteError.Code). They are part of the
// wire protocol.
const (
	// CodeNotLeader: the node is not the raft leader; the message is the
	// leader's RPC address, or "".
	CodeNotLeader = "not_leader"
	// CodeRejected: the state machine refused the command.
	CodeRejected = "rejected"
	// CodeForeignCluster: the caller and the receiver belong to different
	// clusters (transport.CodeForeignCluster).
	CodeForeignCluster = "foreign_cluster"
	// CodeShutdown: the node is shutting down.
	CodeShutdown = "shutdown"
	// CodeBadMethod: no handler for the method.
	CodeBadMethod = "bad_method"
	// CodeNoSession: the session named does not exist.
	CodeNoSession = "no_session"
	// CodeLeaseHeld: another session holds the lease.
	CodeLeaseHeld = "lease_held"
	// CodeBusy: the leader refused a forwarded command (too many pending,
	// or its budget ran out).
	CodeBusy = "busy"
	// CodeSemFull: the state machine refused a semaphore acquire: every
	// permit is held.
	CodeSemFull = "sem_full"
	// CodeSemLimit: the state machine refused a semaphore acquire: its
	// limit differs from the semaphore's.
	CodeSemLimit = "sem_limit"

	// CodeLeaveRefused: the leader refused to take a server out of the
	// raft configuration (too few voters would remain, or no quorum).
	CodeLeaveRefused = "leave_refused"

	// CodeGossipNotEncrypted: the node's gossip is not encrypted.
	CodeGossipNotEncrypted = "gossip_not_encrypted"
	// CodeGossipBadKey: the gossip key has the wrong size.
	CodeGossipBadKey = "gossip_bad_key"
	// CodeGossipNotInstalled: the gossip key is not in the node's keyring.
	CodeGossipNotInstalled = "gossip_key_not_installed"
	// CodeGossipPrimary: the gossip key is the node's primary key.
	CodeGossipPrimary = "gossip_key_primary"
)

// Keyring operations carried by MethodGossipKeyring (KeyringRequest.Op).
const (
	KeyringStatus  = "status" // read-only: is the key installed, primary?
	KeyringInstall = "install"
	KeyringUse     = "use"
	KeyringRemove  = "remove"
)
