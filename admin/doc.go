// Package admin serves an HTTP view of one holdfast node: its raft role,
// the members it sees, the shard table, the held leases and semaphores,
// plus liveness and readiness probes; and, when the application allows
// them, actions that change the cluster (decommissioning the node,
// draining a node, releasing a stuck lease, stepping the raft leader down,
// removing a dead server). Command holdfastctl is its client.
//
// # Mounting
//
// Handler returns an http.Handler that the application mounts on a server
// it already runs. Paths are relative to the handler's root: the handler
// answers /v1/status, not /admin/v1/status. To mount it under a prefix,
// strip the prefix:
//
//	mux := http.NewServeMux()
//	mux.Handle("/admin/", http.StripPrefix("/admin", admin.Handler(c)))
//
// The handler has no TLS of its own: serve it on a trusted interface, or
// behind the application's HTTPS server. Handler (and New without
// Options.Authorize) never changes the cluster: it serves no action. New
// with Options.Authorize serves the actions that function allows: it gets
// every action request and returns nil to allow it.
// RequireClientCertificate allows requests that came over HTTPS with a
// client certificate the server verified (the server's ClientCAs), and
// LoopbackOnly allows requests from the same machine:
//
//	srv.Handler = admin.New(c, admin.Options{Authorize: admin.RequireClientCertificate})
//
// # Actions
//
// An action is a POST with a JSON body that names the node it is meant for
// ({"confirm": "NODE-NAME", ...}): a body whose confirm is not the
// answering node's name is refused (400) and nothing is done, so that a
// mistyped address never acts on the wrong node. Unknown fields are
// refused too. An unauthorised request gets 403, a GET or HEAD 405 with
// Allow: POST. Each action runs under the request's context, bounded by
// Options.ActionTimeout.
//
//	POST /v1/leave   LeaveRequest → LeaveResult: decommission the node (Coordinator.Leave): it leaves
//	                 the raft configuration for good, a replacement promoted first, then stops; 409 when
//	                 refused (too few voters would remain and no replacement, unless "force": true; no
//	                 quorum to commit), 504 without a raft leader in time, 503 once the node is shut down
//
//	POST /v1/drain             DrainRequest {"node"} → OperationResult: node NODE (any member, by name or ID)
//	                           drains: it hands its shards off and takes none; answered once it owns none
//	POST /v1/undrain           DrainRequest → OperationResult: NODE takes shards again
//	POST /v1/leases/release    ReleaseLeaseRequest {"name"} → OperationResult: the lease's current grant
//	                           ends and passes to its next waiter with a new token; the holder's node ends
//	                           its belief first (graceful), or, when it does not answer, the leader commits
//	                           the release without it (graceful false: the old holder may still believe,
//	                           and only the fence refuses its writes once the next holder wrote)
//	POST /v1/raft/step-down    StepDownRequest → OperationResult: the raft leader hands leadership over
//	POST /v1/raft/remove-peer  RemovePeerRequest {"node", "force"} → OperationResult: take a server (by name
//	                           or raft ID) out of the raft configuration, a ready replacement promoted first;
//	                           409 when the voters left could not form a quorum, for the leader itself, or
//	                           for a server gossip shows alive (unless "force")
//	POST /v1/shards/pin        PinShardRequest {"shard", "node"} → OperationResult: the shard is handed to
//	                           node NODE (by name) and kept there while it lives, across its restarts and
//	                           leader changes, until unpinned; 409 for a node without a live, undrained
//	                           session that may own shards, or a shard out of range
//	POST /v1/shards/move       PinShardRequest → OperationResult: a fenced handoff of the shard to NODE now,
//	                           answered once it is owned there (with its token); the balancer may place it
//	                           again later (pin it to keep it); 409 for a shard pinned to another node
//	POST /v1/shards/unpin      UnpinShardRequest {"shard"} → OperationResult: the pin (or pending move) is gone
//	POST /v1/shards/rule       RuleRequest {"name", "rule"} → OperationResult: placement rule NAME ("FIRST-LAST:TAG,..."):
//	                           only nodes with every tag (Config.Shards.Tags, "zone=ZONE") own those shards; the
//	                           balancer moves them off other nodes, and leaves unowned what no node passes
//	                           (plan and status list them); 409 for a range outside the table or a bad tag
//	POST /v1/shards/unrule     UnruleRequest {"name"} → OperationResult: the rule is gone
//
// These ten are carried out by the raft leader (coordinator.Operate),
// which logs each with who asked: the verified client certificate's common
// name and the remote address, or the remote address alone. A refusal is
// 409 with the reason, and nothing changed.
//
// After a successful leave the node has stopped: the application watches
// Coordinator.Done to exit.
//
// # Endpoints
//
// Every read endpoint answers GET and HEAD only; any other method gets 405
// with an Allow header. Unknown paths (a trailing slash included) get 404, and
// a repeated owner parameter 400. These error answers are JSON objects of
// type Error.
//
//	GET /v1/status   Status: this node, its raft role and leader, voters and their health, the group's
//	                 fault tolerance, members, session, readiness
//	GET /v1/shards   ShardList: every shard of the current table version, the pins and the rules; ?owner=NAME keeps node NAME's
//	                 shards, and ?owner= (empty) the free ones; stale and no_leader_since say
//	                 when the node knows no leader, so the table may be out of date
//	GET /v1/shards/plan  PlanResult: what the raft leader's balancer would do in its next round, committing
//	                 nothing: each node's shards, load and target now and after the round, and each move
//	                 with its reason (free, count, load, pin, rule, drain), and the shards no node may own; asked of the leader through Operate.
//	                 On the same table, sessions and load reports, the next round does exactly this
//	GET /v1/leases   LeaseList: every held named lease, with its holder value
//	GET /v1/semaphores  SemaphoreList: every semaphore in use, its limit, holders and waiters
//	GET /healthz     200 "ok\n" until the coordinator is shut down, then 503 "shut down\n"
//	GET /readyz      200 "ready\n" when Coordinator.Ready returns nil, else 503 and the reason
//
// With ?verbose, both probes add a line on the raft group ("raft group: ok:
// ... (judged 2s ago)", "raft group: degraded: ...", or "raft group: unknown: no raft
// leader known ...", each with the judgement's age) without
// changing the status code: a degraded group (a voter unhealthy, fault
// tolerance down) is the cluster's state, not this node's, and pulling
// every node out of a load balancer for it would only make it worse. A
// second line tells this node's raft storage ("raft storage: ok", or
// "raft storage: failing since ...: ..." on a full or failing disk; also
// in /v1/status as storage, and in holdfast_storage_errors_total): a node
// whose storage fails takes no new session, so its leases and shards move
// to the others by their timers, and it catches up once writes succeed
// again; a probe does not fail for it (restarting the process would not
// free the disk).
//
// The /v1 endpoints answer with Content-Type application/json; the probes
// with text/plain. No answer may be cached.
//
// # Schema
//
// The JSON documents are the exported types of this package, with
// snake_case field names; a client decodes them into the same types.
// Within /v1, fields are only ever added, never renamed or removed; a
// client must ignore fields it does not know. Lists are never null: an
// empty list is []. An absent object (no known leader, no session) is null.
// Times are RFC 3339 in UTC.
//
// # Consistency
//
// Every answer comes from this node's local replica and its own view of
// gossip and raft, like the Coordinator methods it calls: no request
// reaches another node, and a follower's view may lag the leader's by a
// little. The group health (Status.Group and each voter's Healthy) is the
// raft leader's autopilot judgement, which the leader hands to every
// member of the raft configuration with its periodic stats request; a node
// that has not received one recently reports it as not known. Each list (the shard rows of one answer, the leases of one
// answer) is read from a single replica version; the fields of a Status are
// read one after the other and may straddle a change.
package admin
