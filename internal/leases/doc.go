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
// The part holds no pointer to the coordinator. It takes what it needs
// through Options: the local replica's views, a proposer (one attempt, and
// one that retries while an outcome is unknown), request numbering on this
// node's current session, the error values it returns and recognises, and
// its metrics. A grant's belief (its context, token and deadline) comes from
// the coordinator through Options.Believe.
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
// ends, everything it held or waited for goes with it.
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
