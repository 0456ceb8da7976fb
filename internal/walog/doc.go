// Package walog is the raft log and stable store of a voter's data dir: a
// write-ahead log of segment files, appended to with one fsync per batch of
// entries, and a small state file holding raft's term and vote and the list
// of segment files.
//
// Its rule is raft's: an entry it acknowledged stays, an entry it did not
// acknowledge (or deleted) never comes back, the last log term never goes
// backwards; and a directory whose files cannot show that is refused, with
// a *CorruptError naming the file and the offset, rather than read.
//
// # Format
//
// The directory holds the state file "state" and segment files named by a
// sequence number (00000000000000000001.seg, ...). A segment starts with a
// header (magic, the log's random ID, its sequence number, the index of its
// first entry, a checksum), then holds a run of records, each a 4-byte
// little-endian payload length, the payload's CRC-32C, and the payload:
// index, term, type, the append time, the data and the extensions of one
// raft entry, the entry's distance from the first entry of its StoreLogs
// batch, and an end mark (a non-zero byte). A segment is preallocated to Options.SegmentSize; a new
// one is started once the active one has grown past it.
//
// The state file is two 4 KiB slots, each a whole copy (the log ID, the
// first and next segment numbers, the stable keys) with a sequence number
// and a checksum. A write overwrites the second slot, syncs, then the first,
// syncs: it needs no new space (a full disk cannot fail it on ext4, xfs or
// tmpfs), and at every moment one slot holds either the state before or the
// state after; a slot torn or corrupt is rebuilt from the other on open.
//
// # Durability and recovery
//
// StoreLogs returns once its records are written and synced (a new
// segment's file, its directory and the state file listing it are synced
// before), unless Options.DeferSync says the batch's sync may follow (a
// raft leader's commands, whose followers store them meanwhile): the call
// then returns once the records are written, SyncDeferred syncs them, and
// Durable tells how far the disk goes. Every write (an append, a stable
// key, a deletion, Close) first syncs a deferred batch, so at most the last
// batch is ever unsynced, and a crash tears at most that batch, as when
// every append syncs. A deferred sync that fails cannot be undone: the log
// refuses every later write and the batch never becomes durable through
// it. Open replays the segments the state file lists, in order, and
// checks that each is there, has its own header and continues the one
// before; files before the list (a compaction's not yet removed) are
// removed, files after it (a segment being created, or a suffix being
// deleted, at a crash) are set aside as NAME.broken, and any other file is
// refused, hashicorp/raft-wal's among them. Open syncs the last segment
// before it returns: after a process crash (not a power cut) the page
// cache still holds what the process wrote and had not synced, Open shows
// it, and raft acts on it at once, so it must reach the disk first.
//
// A record that is cut short, fails its checksum or does not follow its
// predecessor (index, term, batch) is corruption anywhere but in the last
// segment. There it is a torn last write only if the bytes after it are
// what a crash during one append can leave: zeros; or a bad record with a
// zero-filled sector (unwritten preallocated space), a zero where its end
// mark belongs (a short write) or a length running past the end of the
// file; or non-zero bytes that stop before the shortest record's end mark
// would be (a short write that cut the length field itself); possibly
// followed by records of the same batch
// (a batch's pages reach the disk in any order until its sync returns). A
// valid record of a later batch proves the bad one was synced, and so
// acknowledged: Open refuses. So does a record garbled in place with no
// sign of a torn write. A torn tail is cut: the file as it was is kept as
// NAME.broken first, then the tail is zeroed and synced.
//
// Open bounds what it allocates by the file sizes, whatever the bytes: a
// length field beyond the file or beyond 16 MiB is a bad record.
//
// # Failures
//
// A call that fails leaves the log as it was, on disk too, or makes every
// later write fail (until the log is reopened): a failed append is zeroed
// back (and any growth of the file cut off) and synced; a failed state
// write puts both slots back. Only when that undoing fails too does the
// log refuse further writes; then a restart shows it as before the failed
// call, or with the failed call done in whole, as after a crash during it.
// A full disk fails an append before it writes (space is reserved first)
// and never fails a term or vote write; once space is free the next append
// succeeds. Reads go on after a failure.
//
// DeleteRange either drops a prefix (compaction after a snapshot) or a
// suffix (a follower's conflicting entries). A suffix is removed from disk
// before DeleteRange returns and before reads stop finding it: later
// segments leave the state file's list and the disk, and the segment
// holding the new last entry is cut after it and synced (a change of size
// survives a crash whole or not at all; its space is then reserved again). A prefix removes the segments it covers
// entirely (a failed removal is retried later: the state file no longer
// lists them); the entries of a partly covered segment stay on disk, so a
// reopened log can start a little earlier than the closed one did, with
// entries raft had compacted and still agrees with. Deleting every entry
// removes every segment, after which the next append may start at any index
// (as after a snapshot is installed); Log reports itself monotonic to raft,
// which then deletes the whole log after restoring a snapshot. No lock that
// readers take is held across a sync or a removal.
//
// # Older directories
//
// A directory of format 1 (headerless segments, term and vote in a file
// "stable" without a checksum) is upgraded on open: the state file takes
// the stable keys and lists the old segments, which are read in their
// format (a torn tail there is cut only when no valid record follows it)
// and take no more appends; new segments are of format 2. ReadOnly opens
// without repairing or upgrading anything, for an offline check.
//
// # File systems
//
// Every file operation goes through FS (OSFS in production): tests inject
// failures at any call, fill the disk, and simulate power cuts that lose
// every write not yet synced.
package walog
