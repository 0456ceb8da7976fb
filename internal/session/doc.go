// Package session holds both sides of holdfast's session rules (lease rules
// 1–4 in docs/ARCHITECTURE.md), apart from the node that runs them.
//
// The holder's side: a Session is this node's belief in its session, valid
// until a deadline on a Clock that counts the time the machine spends
// suspended; a timer ends it at that instant even if no message ever
// arrives, and every read looks at the clock too, so a node resumed from
// suspend sees its belief gone at once. A Belief is one grant's window
// under a session (a leader lease, a shard lease, a permit); it may be
// capped at the session's deadline of one moment, after which keepalives no
// longer extend it. A Belief's context registers nothing with the session's
// until someone waits on it, so a node may hold tens of thousands of shard
// leases nobody waits on at a few dozen bytes each. A Client keeps the node in a session: it opens one,
// sends a keepalive every TTL/3, extends the belief to the keepalive's send
// time + TTL·(1 − drift) − margin once the local replica has caught up with
// the answer, and closes a session whose belief ended before opening the
// next.
//
// The leader's side: a Lessor keeps every session's deadline in memory on
// the leader's clock, gives every session TTL + grace when it becomes
// active and extends every deadline by the time it was stalled (a gap
// between the passes of its loop over LessorOptions.StallThreshold) before
// it decides any expiry, commits an expiry when a deadline passes (and no
// keepalive for the session is in flight) and refuses keepalives for it
// from then on, and answers a keepalive (or a consistent read's
// commit index) only after a confirmation round that started after it
// arrived: a majority of voters, this node included, saying they are still
// in its raft term.
//
// Neither side knows raft, the replica's storage or the network: they get
// what they need as functions in ClientOptions and LessorOptions. The
// RPC glue between the two sides (SendKeepAlive and AskConfirm for the
// caller, Lessor.Register for the server) speaks internal/wire's messages
// over a Caller. Their goroutines are the caller's: Client.Run, Lessor.Run and
// Lessor.ConfirmLoop return when their context ends, and the caller joins
// them; the Client's background closes run through ClientOptions.Spawn.
package session
