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
// A command is one version byte, one operation byte and a msgpack body (see
// Encode and Decode). A snapshot is a version byte followed by the msgpack
// encoding of the state. Both decoders bound the input size.
//
// # Concurrency
//
// raft calls Apply, Snapshot and Restore from one goroutine; View, Wait and
// Changed may be called from any goroutine at any time.
package fsm
