// Package walog is the raft log and stable store of a voter's data dir: a
// write-ahead log of segment files, appended to with one fsync per batch of
// entries, and a small file holding raft's term and vote.
//
// # Why not bbolt
//
// A bbolt commit writes the changed pages, fsyncs, writes its meta page and
// fsyncs again, and a raft commit with three voters waits for the leader's
// commit and then a follower's, one after the other. Appending the batch to
// a file and syncing it once costs a fraction of that, and a commit is most
// of the time of an acquire.
//
// # Format
//
// The directory holds segment files named by a sequence number
// (00000000000000000001.seg, ...) and the file "stable". A segment is a run
// of records, each a 4-byte little-endian payload length, the payload's
// CRC-32C, and the payload: index, term, type, the append time, the data
// and the extensions of one raft entry. A segment's records have
// consecutive indexes, continuing the previous segment's. A new segment is
// started once the active one has grown past Options.SegmentSize.
//
// # Durability and recovery
//
// StoreLogs returns once its records are written and the segment synced
// (and, for a new segment, its directory). Opening replays every segment in
// order; a record that is cut short, fails its checksum or does not follow
// its predecessor ends the log if it is in the last segment (a write the
// crash interrupted, which was never acknowledged), and the file is
// truncated there; anywhere else it is an error.
//
// DeleteRange either drops a prefix (compaction after a snapshot) or a
// suffix (a follower's conflicting entries). A suffix is removed from disk
// before DeleteRange returns: whole segments are deleted and the segment
// holding the new last entry is truncated and synced. A prefix removes the
// segments it covers entirely; the entries of a partly covered segment stay
// on disk, so a reopened log can start a little earlier than the closed one
// did, with entries raft had compacted and still agrees with. Deleting every
// entry removes every segment, after which the next append may start at any
// index (as after a snapshot is installed); Log reports itself monotonic to
// raft, which then deletes the whole log after restoring a snapshot.
//
// The stable store's keys and values are rewritten as a whole on each Set
// (write to a temporary file, sync, rename, sync the directory): raft sets
// them only when the term or the vote changes.
package walog
