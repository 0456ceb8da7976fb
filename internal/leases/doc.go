// Package leases is this node's side of named leader leases and semaphore
// permits: the local slot that lets one local caller at a time contend for
// a lease name, the acquire (granted at once, queued, or refused), the wait
// for a queued request's grant, the watch that ends this node's belief in a
// grant once the local replica no longer shows it, and the settlement of
// requests whose caller stopped waiting.
//
// Leases and semaphores share one path, parameterised by Kind: they differ
// only in their commands, in how a grant shows in the replica, and in the
// local slot (a node holds a lease name once, but may hold several permits
// of one semaphore).
//
// The part holds no pointer to the coordinator, and a request flows one
// way: the coordinator calls in, and nothing calls back. It takes what it
// needs through Options: the local replica's views, a Proposer (Commit, and
// Accept for early releases; *raftnode.Node satisfies it), request
// numbering on this node's current session, and its metrics. It retries a
// commit whose outcome is unknown itself (Retry), builds each grant's
// belief (a session.Belief, as internal/shards does for shard leases) and
// returns the protocol's errors (wire.ErrShutdown, wire.ErrLeaseHeld,
// wire.ErrNoSession, wire.ErrRejected; wire.ErrReleased and
// wire.ErrLeaseLost as the causes of a grant's end), which the coordinator
// exports under the same names.
//
// # Granted on the leader's answer
//
// An acquire the leader grants at once returns as soon as the leader has
// committed the grant and answered it, on a follower too: it does not wait
// for the local replica to apply the grant's index (on a follower that
// takes until raft's next append, up to two CommitTimeouts). This is safe:
//
//   - The fencing token is the one the leader's commit minted, at the
//     grant's raft index: every replica will show that very token for the
//     request once it applies the index, and no other holder can be granted
//     the name at a lower index.
//   - The belief's time comes from the session, whose deadline is counted
//     from the send time of this node's last answered keepalive, which is
//     before the leader's own expiry deadline. Believing before the replica
//     has applied the grant adds nothing to that window: the grant cannot
//     outlive the session on the leader, and the belief ends at the
//     session's deadline whether or not the replica has caught up.
//   - The watch loop looks at a grant only in views at or past the index it
//     was granted at: a replica that has not applied it yet shows the old
//     holder (or none), which must not end the belief. Once the replica is
//     past that index, a view that shows another holder, or none, ends the
//     belief with wire.ErrLeaseLost as for any other grant.
//
// A queued request learns of its grant from the local replica, or from the
// leader (Options.AskLeader, answered by ServeWait), whichever shows it
// first: the leader applies the release that grants it one raft message
// before a follower's replica does. Any replica's applied view holds only
// committed entries, so the leader's answer (the token, and the index of a
// view that shows the grant) is taken as the replica's would be.
//
// What the local replica shows lags by the same time: the holder of a name
// read from the replica (the coordinator's Holder, Leases, Semaphore) may
// not show this node's grant until the replica catches up.
//
// Goroutines: New starts the watch loop; settlements run in goroutines of
// their own. Close ends every grant and joins them all.
//
// # Settlement
//
// A request whose caller stopped waiting may still have been committed:
// the context ended after the command reached raft, or the leader's answer
// was lost or late. Such a request is settled: the node commits a release
// that names the request, which releases the grant that answered it, takes
// it out of the queue, or (if the acquire has not arrived yet) marks it
// given up so that it changes nothing when it does. Settling is retried
// until it commits, for as long as the session lives: when the session
// ends, everything it held or waited for goes with it. Once a settlement
// has committed, the failed acquire can no longer take effect; a test that
// checks histories learns that moment through SetSettleHook, which also
// says when a failed acquire asked the cluster nothing at all.
//
// # Releases
//
// Release returns once the release has committed: it is linearizable, so
// once it returns every read index (a Sync on any node) and every acquire
// by any node finds the grant released. A release whose forward to the
// leader is abandoned because raft reported another leader (the proposer
// gives up on a leader that lost office) is repeated at the next one at
// once; repeating it is harmless, as it names its request.
//
// # Handovers
//
// Local callers of one lease name wait in its slot, first come, first
// served; a local TryAcquire is refused while the slot's turn holds the
// name, waits in the cluster's queue or releases it, and waits while the
// turn's acquire is unanswered (the name may still be free). A Release while one waits hands the name over: the releasing
// goroutine numbers the waiter's request and proposes the release and the
// waiter's acquire as one command (fsm.OpLeaseHandover), and the waiter
// goes on from that command's answer as if it had asked itself (granted,
// or queued behind other nodes' sessions, which keep their turn). The
// release promises what it always did: it returns once that command has
// committed. The gain is the commit: without it the waiter's acquire is
// proposed only after the release has committed, so a contended name
// changes hands in two commits in turn (two fsyncs on a single voter); with
// it, in one. If the waiter gives up meanwhile, what the handover asked
// for it is settled and the next waiter gets the slot; if the handover's
// outcome is unknown when the releaser's context ends, the release half is
// settled and the waiter asks again under the request the handover made for
// it (so a late commit of the handover is what its acquire answers); if the
// handover cannot be made (the node's session changed, the command was
// refused) the release goes alone.
// ReleaseBeforeCommit does not hand over. Nodes hand over only while every
// live session was created by a release that reads the command (see
// fsm.CommandLevel): during a rolling upgrade, releases stay two commands.
//
// # Releases before their commit
//
// With Proposer.Accept, ReleaseBeforeCommit returns as soon as raft on the
// leader has taken the release in, without waiting for its commit: on the
// leader at once, on a follower when the leader answers the forwarded
// release (wire.ApplyRequest.Accept). What it promises, and what it does
// not:
//
//   - The belief ended before the release was proposed, and another
//     holder is granted the name only when the release commits: two
//     beliefs never overlap. Tokens come from the commits, as ever.
//   - Raft's leader loop takes proposals one at a time and in order, and
//     the leader answered only after taking the release in, so every
//     command this node proposes or forwards afterwards comes after the
//     release in the log, and is applied after it: a later acquire of the
//     name by this node finds it released.
//   - Other nodes get no promise. While the leader that took the release
//     in stays in office, its read index waits for the commands it took in
//     this way, so a Sync that starts after the return reads after the
//     release. But the release may be lost if that leader loses office
//     before it commits, and until it is delivered again other nodes still
//     see the grant held: the linearizability check of package coordinator
//     rejects such histories (a Sync then Holder 0.67 s after a returned
//     release still saw the releaser holding the name).
//   - The commit is followed in the background: on the leader through
//     raft's answer, on a follower by watching the replica, at or past the
//     grant's index, until it no longer shows the grant. If that does not
//     happen within Options.AttemptTimeout, or raft reports another leader
//     first (Options.LeaderChanged), the release is settled (see
//     Settlement) at once. A later acquire that meanwhile still finds the
//     old grant releases it by its request ID and asks again, as for any
//     earlier request of the session.
//
// # Built on the grants
//
// Election is a client-go-style leader election loop over any lease handle
// (Term), with its readiness Check. HolderOf, SemHolders, List and Observe
// read who holds what from a replica view. Retry commits an idempotent
// command, retrying while its outcome is unknown. SemError gives a
// semaphore refusal its caller-facing kind. Election.Run and Observe block:
// they run in their caller's goroutine, and Run joins the goroutines it
// starts before it returns.
package leases
