// Package lincheck checks histories of lease and semaphore operations for
// linearizability with github.com/anishathalye/porcupine. It holds the
// sequential models (one holder per lease name; N permits per semaphore
// name), a Recorder that turns concurrent calls into a porcupine history,
// and Check, which runs the checker and, when a history is rejected,
// writes porcupine's HTML visualization and says where.
//
// It is a library for tests: the cluster scenarios of package coordinator
// record real calls on a faulty in-memory network, and a deterministic
// simulation can record the calls of every seed and check them the same
// way. Nothing in the module outside tests imports it.
//
// # The model
//
// A history is a list of operations on names; names are independent
// (linearizability is compositional), so the checker partitions by name.
// Each operation has a client (who holds: the node's name), a call and a
// return time, an input and an output:
//
//   - Acquire, granted: legal when fewer than the limit hold the name
//     (for a lease: nobody); the grant's token must exceed every token
//     granted for the name before. The client then holds the grant.
//   - TryAcquire refused: legal when the limit is reached (for a lease:
//     held by another client).
//   - Release: frees the client's grant with that token; legal only while
//     the client holds it.
//   - Read (Sync, then the holder or holders): the holders and tokens of
//     the moment, exactly.
//
// A request that failed (its caller gave up; the command may have reached
// raft) may still take effect later. The recorder marks its output
// unknown and lets it return at the latest possible moment (see
// Recorder.Finish): an unknown acquire either changes nothing or grants
// the name with a token nobody saw yet (a later read may show it, with a
// token between the last one granted before and the first one granted
// after); an unknown release either frees the grant or not yet. The
// background release the node commits for such an acquire (its
// settlement) is an operation of its own, Settle, that frees that grant
// if it exists, at an unknown time; when the test sees the settlement
// commit (Recorder.Settled), that time bounds both the settlement and the
// acquire it settles, since a committed settlement gives the request up.
// A grant its holder saw end without a release (its session lost) is
// dropped by a Lost operation, also at an unknown time.
package lincheck
