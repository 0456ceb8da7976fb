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
