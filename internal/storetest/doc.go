// Package storetest proves a raft log store against the disk: a storage
// conformance and torture suite written against raft.LogStore and
// raft.StableStore, so that it runs on every store a node can use
// (internal/walog, and raft-boltdb for the data dirs written before it).
//
// It gives the faults a disk has: MemFS, an in-memory file system that
// knows what a power cut keeps (every write not yet synced lost, or some
// of them: an earliest part, a latest part, a random part, by 512-byte
// sector) and that fills up (ENOSPC); FaultFS, which fails any call
// (write, fsync, fallocate, truncate, remove, rename, create) with EIO or
// ENOSPC; a randomized raft-like Workload (appends, a new term and a vote,
// a conflicting suffix deleted and written again at a newer term,
// compaction, a snapshot replacing the log, reopens); and a Model of what
// the store acknowledged, against which Check judges what a store shows
// after each fault: nothing acknowledged lost, nothing stale or
// unacknowledged returned, the last log term never going backwards.
//
// PowerCuts, ProcessCrashes, Faults and DiskFull run a seed of a workload
// through those faults (ProcessCrashes kills the process instead of
// cutting the power: the page cache keeps every write, the store restarts
// on it, and a power cut right after that restart must leave what the
// restart showed); Corruptions damages a closed store's files (bit flips in every
// file, zeroed sectors, garbled lengths, lost, renamed and extra segment
// files, another store's files) and requires a refusal naming the file, or
// a recovery that loses at most a torn last batch and keeps a copy of what
// it cut; Conformance checks the API semantics raft relies on. Every run
// logs its seed; Figures counts what was tried, for the record.
package storetest
