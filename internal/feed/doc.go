// Package feed serves the replicated state to nodes outside the raft
// group. A node in the raft configuration (a voter or a standby) answers
// Pull requests with the commands it has applied, each with its raft
// index, read from its own raft log, or with its state machine's snapshot
// in chunks when the requester is too far behind for the log; a replica
// (Client) pulls from one such server, chosen by rendezvous hashing of its
// name over the servers (the raft leader last), applies what it receives
// to its own FSM in index order, and moves to the next server when one
// fails. The FSM is deterministic, so the same commands in index order give
// every replica the leader's state.
//
// Invariants, each kept by a rule here:
//   - a replica never shows state newer than committed: a server sends
//     only entries at or below its own applied index, and a node applies
//     only committed entries;
//   - a replica never goes backwards: it applies an entry only above its
//     index and restores a snapshot only above it, and a server holds a
//     pull until its own index passes the replica's;
//   - Sync stays linearizable: it still takes its read index from the
//     leader (through the leader address servers pass along) and waits
//     until the replica's index reaches it.
//
// A pull is a long poll: the server answers as soon as it has something
// past the replica's index, when its leader changes, or after MaxWait, so
// an idle replica costs its server one small request per MaxWait.
package feed
