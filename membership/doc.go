// Package membership is holdfast's view of the gossip pool: which nodes
// exist, how to reach them, what they say about themselves (Meta) and
// whether they are alive. It wraps hashicorp/memberlist (SWIM gossip) and
// never exposes its types, except that Config.Transport accepts a
// memberlist.NodeAwareTransport so tests can run on an in-memory network.
//
// # Lifecycle
//
// New starts the local node (alone); Join merges it into a pool through one
// or more seeds (a seed that is a DNS name stands for every address it
// resolves to, through Config.LookupHost; this node's own address is
// skipped); SetMeta changes what it gossips; Leave announces a graceful
// departure; Shutdown stops everything. Leave and Shutdown are idempotent.
//
// # Members
//
// Members returns every node this node has seen, sorted by name: alive ones
// and, until Config.ReapAfter has passed, Failed and Left ones with the time
// of their last state change (Member.Since, local clock), so a caller can
// tell how long a node has been gone. The local node is included.
//
// # Events
//
// Events delivers, in the order observed:
//
//   - Join: a node became alive: first seen, or back after Failed or Left
//     (including the local node, whose Join is the first event).
//   - Update: an alive node changed its Meta or address.
//   - Leave: a node left gracefully (it called Leave).
//   - Fail: gossip declared a node dead (crash, partition, Shutdown without
//     Leave). A Leave may follow a Fail for the same node when its leave
//     notice arrived after the failure report; Since then stays the time of
//     the failure.
//
// Events are queued without bound and never block gossip; a slow reader only
// sees them late. Members may already reflect changes whose events are still
// queued. Reaping a Failed or Left member emits no event.
//
// # Reconnecting
//
// A node cut off from everyone sees every other node Failed, and memberlist
// stops contacting a dead node after its GossipToTheDeadTime, so after a
// long partition neither side would look for the other. Every
// Config.ReconnectInterval (500 ms Local, 5 s LAN by default) a node joins
// one member it holds Failed, round robin, until the member is reaped; the
// join's state exchange makes both sides refute each other's death, so a
// healed node is alive in every member list within a few intervals.
//
// # Guarantees and non-guarantees
//
// Views are eventually consistent: two nodes may disagree for a while about
// who is alive, and a node reported Failed may be alive on the other side of
// a partition. Suspicion is not reported (State Suspect is never set).
// A node whose name is already used by an alive node at another address is
// refused (Join fails with ErrDuplicateName). Config.Accept can refuse other
// nodes, e.g. members of a foreign cluster; a refused node never appears in
// Members, though the refusal is one-sided unless both sides refuse.
//
// # Encryption
//
// With Config.Keys set, every gossip message, UDP and TCP, is encrypted and
// authenticated with AES-GCM under the primary key (the first), and every
// message received must decrypt under one of the keys: a node without a key,
// or with none of the pool's keys, cannot join (its Join fails, nobody lists
// it) and cannot inject state. An observer still sees which addresses talk,
// how much and when. Encryption protects gossip only: raft and RPC need TLS.
//
// The keys of each node change at run time with InstallKey (accept a key),
// UseKey (encrypt with it) and RemoveKey (stop accepting it). To
// rotate a pool's key without losing anyone: install the new key on every
// node, then make it primary on every node, then remove the old key from
// every node; each step must be complete on all nodes before the next one
// starts. The keyring lives in memory only: a node restarted later needs
// the current keys in its Config.
//
// # Concurrency
//
// All methods of Membership are safe for concurrent use. Config.Accept is
// called from gossip goroutines with memberlist's locks held: it must be
// quick and must not call Join, SetMeta, Leave or Shutdown (Members, Member
// and Local are fine).
package membership
