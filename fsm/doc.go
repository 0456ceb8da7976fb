// Package fsm is holdfast's replicated state machine: the commands that the
// raft log carries, how they are applied, and how the state is snapshotted,
// restored and read.
//
// # Contract
//
//   - Apply is deterministic. It reads no clock, no randomness and nothing
//     local to the node, and never depends on map iteration order: the same
//     log applied to two FSMs yields byte-identical snapshots.
//   - Apply never panics on bad input. A command that is too large, of an
//     unknown version or operation, or malformed is rejected: the log entry
//     is consumed, the state is unchanged, and the Result carries an error.
//   - Readers never lock. After every apply the FSM publishes a new immutable
//     *View with an atomic pointer swap; a View is never modified after it is
//     published, so it may be shared freely between goroutines.
//
// # The shard table
//
// A replica keeps 32 bytes per shard: a pointer to the owning session's
// immutable record (shared by every shard the session owns, so owner names
// and addresses are not copied per shard), the token and grant index, and
// a pointer to the revoke's index and target while the shard is revoking.
// View.Shard and EachShard expand an entry into a Shard without
// allocating; View.ShardOwner is the one-read ownership lookup.
//
// Every view also carries a bounded log of the shards recent commands
// changed. A consumer keeps the ShardCursor of the last view it processed
// and asks a newer view for ShardChanges, which lists the shards changed
// in between at a cost that follows the changes, or says it cannot (the
// consumer fell too far behind, or the table was created or restored
// since), in which case the consumer rescans the table.
//
// A shard command carries at most MaxShardItems items and MaxCommandSize
// bytes; EncodeShardCmds splits a batch of any size into the fewest
// commands within both limits.
//
// The state also indexes the table by owner: per session ID, a bitmap of
// the shards it owns, in chunks of 2,048 shards, kept copy-on-write by
// the commands that grant and free shards. A session's end frees its
// shards through it, in shard order, at a cost that follows how many it
// owns instead of scanning the table. Snapshots do not carry the index;
// Restore rebuilds it from the table.
//
// # Lease requests
//
// Every acquire carries its session and a request ID (increasing per node);
// its grant or queue entry remembers it, and a release names the request it
// gives up. A command acts only on what its own request created: a late,
// repeated or given-up acquire is stale (Result.Stale) and changes nothing,
// a newer acquire of a waiting session takes over its older queue entry,
// and a release touches only its request's grant or queue entry. Each
// session keeps a request mark per lease name for this (Session.Marks). A
// release without a request ID comes from an older log and keeps its old
// meaning.
//
// OpLeaseHandover is one node passing a name between two of its callers:
// the release of one request and the acquire of a later request of the
// same session, applied in one step as an OpRelease and an OpAcquire at
// the same index would be (the queue order is kept: another session that
// waits is granted first). It is written under HandoverCommandVersion (7).
// Nodes propose it only while every live session carries the command
// level that reads it (SessionCmd.Level, View.SessionsAtLevel), so a
// replica of an older release is never sent one.
//
// # Semaphores
//
// A semaphore lets up to Limit requests hold a name at once, each permit
// with its own fencing token from the one token counter (so a name's
// tokens strictly increase). The first acquire of a free name fixes the
// limit; an acquire with another limit is refused (ErrSemLimit). Permits
// and queue entries are keyed by (session, request); waiters are served
// first come first; a release names its request; a session's end frees
// its permits and queue entries in the same command and grants the freed
// slots. Stale, repeated and late commands change nothing, by the same
// request marks as leases, kept per semaphore name (Session.SemMarks).
// Snapshots list semaphores after the shard table; one written before
// semaphores existed restores with none.
//
// # Encoding
//
// A command is one version byte, one operation byte and a body (see Encode
// and Decode). Under CommandVersion (1) the body is msgpack; every
// operation but the shard commands is written so. The shard commands
// (grant, revoke, release) are written under ShardCommandVersion (2) with
// a compact body, because they carry up to thousands of items and every
// replica decodes each one:
//
//	flags     one byte: bit 0 is Force, the other bits are 0
//	strings   a count, then each string as a length and its bytes
//	items     a count, then per item: shard, session, token, target
//
// Every number is an unsigned varint in its shortest form. session is the
// index of the item's session ID among the strings; target is 0 for none,
// else 1 + the index of the target session ID. The strings are the
// distinct session IDs and targets in order of first use, so a command
// names each session once and a body has exactly one encoding: Decode
// rejects anything else (a longer varint, an unused or repeated string,
// trailing bytes) with ErrMalformed, and Encode(Decode(b)) == b. Like the
// msgpack form it can carry what Apply rejects (no items, an empty or
// overlong session ID), so Apply decides. Shard commands written under
// version 1 by earlier releases still decode. A node of an earlier release
// cannot read version 2, so every replica must run this release before a
// leader of it writes shard commands.
//
// An OpInitCluster that carries a token base (the creating leader's
// clock, an operator's floor) is written under InitCommandVersion (3) with
// a msgpack body, so that an earlier release, which would ignore the base,
// refuses it rather than start its tokens elsewhere; one without a base is
// written under version 1, as every release wrote it.
//
// An acquire that carries a holder value (LeaseCmd.Value), and every
// OpLeaseValue, is written under ValueCommandVersion (4) with a msgpack
// body, so that an earlier release refuses it rather than show the holder
// without its value; an acquire without a value is written under version
// 1, byte for byte as before.
//
// # Holder values
//
// A lease's grant may carry a small value (at most MaxValueLength bytes of
// UTF-8) that every replica shows with its holder: given by the acquire
// (a waiter keeps it in the queue), and changed by the holder with
// OpLeaseValue under the same token, once per increasing ValueSeq, only
// while the grant its request names holds the lease. A snapshot in which a
// lease or a waiter carries a value is written under SnapshotValueVersion
// (2), one without under SnapshotVersion (1) as before; Restore reads
// both.
//
// # Shard pins
//
// OpShardPin (written under PinCommandVersion, 5, with a msgpack body, so
// an earlier release refuses it) sets or clears an operator's pin of a
// shard to a node, by node name so that it survives the node's restarts
// (a new session): the leader's balancer moves the shard there and keeps
// it there while that node has a live session. A pin with Once is a
// move: the leader clears it once the shard is owned on the node. At most
// MaxPins pins exist. A snapshot with a pin is written under
// SnapshotPinVersion (3), which may also hold holder values; one without
// under the earlier versions as before; Restore reads all three.
//
// # Placement rules and tags
//
// OpShardRule sets or clears, by name, an operator's placement rule: only
// a session carrying every tag the rule requires (Session.Tags, from its
// create) may own a shard in the rule's range. Apply only keeps the
// rules; the leader's balancer reads them on every round. At most
// MaxRules rules exist. An OpShardRule, and a session create with tags,
// are written under RuleCommandVersion (6) with a msgpack body, so that an
// earlier release refuses them rather than place shards without them; a
// create without tags is written as before. A snapshot that holds a rule
// or a tagged session is written under SnapshotRuleVersion (4), which may
// also hold pins and holder values; one without under the earlier
// versions as before; Restore reads all four.
//
// # Tokens across incarnations
//
// Tokens are one counter (the state's last token), a plain number below
// 2^63 so it fits a signed 64-bit database column. InitCluster starts it
// at the cluster's token base, max(Created, TokenFloor): the creating
// leader's wall clock in microseconds (carried in the command, so Apply
// reads no clock) and the operator's floor. A cluster created anew after
// every data dir was lost thus issues tokens above every token of the
// earlier incarnation as long as that one issued fewer grants than one per
// microsecond between the two creations, and the clocks were not set back
// by more than the difference (Cluster.TokenBase states the exact
// condition); the floor covers every token that reached a resource. A
// cluster created by an earlier release has base 0 and keeps counting
// from where it is.
//
// A snapshot is a version byte followed by the msgpack encoding of the
// state. Both decoders bound the input size.
//
// # Concurrency
//
// raft calls Apply, Snapshot and Restore from one goroutine; View, Wait and
// Changed may be called from any goroutine at any time.
package fsm
