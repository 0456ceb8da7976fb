package fsm

import "slices"

// The change log's bounds. A consumer that falls further behind than the
// log reaches back is told to rescan the table (ShardChanges returns false).
const (
	// maxChangedIDs bounds the shard IDs the log holds in all (4 bytes
	// each); a single command that changes more resets the log.
	maxChangedIDs = 1 << 16
	// maxChangeEntries bounds the commands the log holds.
	maxChangeEntries = 4096
)

// lineage identifies one history of the shard table: New and every Restore
// start a new one, so that a cursor taken before a restore is never
// answered from the log of another history.
type lineage struct{ start uint64 }

// changeEntry lists the shards one command changed, in the order it
// changed them.
type changeEntry struct {
	index uint64
	ids   []uint32
}

// changeLog is the recent history of the shard table, carried by every
// view. It holds every shard change with an index above from. Views share
// the entries' backing array: a new view only appends past the end of the
// previous view's slice (raft applies one entry at a time, always on the
// newest view), so no view ever sees an element change.
type changeLog struct {
	lineage *lineage
	from    uint64
	entries []changeEntry
	ids     int // IDs in entries
	dead    int // dropped entries still in the backing array before entries
}

// newChangeLog returns an empty log of a new history that starts at index.
func newChangeLog(index uint64) changeLog {
	return changeLog{lineage: &lineage{start: index}, from: index}
}

// record returns the log after a command at index changed the shards ids
// (nil: none). A table that was created or replaced (reset) restarts the
// log at index.
func (l changeLog) record(index uint64, ids []uint32, reset bool) changeLog {
	switch {
	case reset || len(ids) > maxChangedIDs:
		return changeLog{lineage: l.lineage, from: index}
	case len(ids) == 0:
		return l
	}
	l.entries = append(l.entries, changeEntry{index: index, ids: ids})
	l.ids += len(ids)
	for len(l.entries) > maxChangeEntries || l.ids > maxChangedIDs {
		l.ids -= len(l.entries[0].ids)
		l.from = l.entries[0].index
		l.entries = l.entries[1:]
		l.dead++
	}
	if l.dead > len(l.entries) {
		// The dropped slots still hold their ID lists: once they outnumber
		// the live ones, move the live ones to a new array (amortised O(1)
		// per command), so that the old lists are freed with the old views.
		l.entries, l.dead = slices.Clone(l.entries), 0
	}
	return l
}

// ShardCursor marks a point in a replica's shard table history: the view it
// was taken from. It holds no table, so keeping one keeps no old state
// alive. The zero ShardCursor is before any history.
type ShardCursor struct {
	index   uint64
	lineage *lineage
}

// Index returns the raft index of the view the cursor was taken from (0 for
// the zero cursor).
func (c ShardCursor) Index() uint64 { return c.index }

// ShardCursor returns this view's point in the table's history: pass it to
// a later view's ShardChanges to learn which shards changed in between.
func (v *View) ShardCursor() ShardCursor {
	return ShardCursor{index: v.index, lineage: v.changes.lineage}
}

// ShardChanges appends to buf the IDs of the shards whose entry (state,
// owner, token, grant or revoke) changed after cursor c up to this view,
// in increasing order and each once, and returns the extended slice with
// ok true. A shard that is not listed is unchanged; a listed one may have
// changed and changed back. Changes of sessions (a drain, for instance)
// are not shard changes.
//
// ok is false, and buf is returned as it was, when the view cannot tell:
// c is the zero cursor, from a later view, or from another history (the
// table was created, or the replica restored a snapshot, since), or the
// replica's change log no longer reaches back to c (it keeps the changes
// of the last 4,096 shard commands and 65,536 shard IDs at most, and a
// command that changes more restarts it). The caller must then rescan the
// whole table (EachShard). The work is proportional to the changes
// listed, not to the table.
func (v *View) ShardChanges(c ShardCursor, buf []uint32) (ids []uint32, ok bool) {
	l := &v.changes
	if c.lineage == nil || c.lineage != l.lineage || c.index < l.from || c.index > v.index {
		return buf, false
	}
	i, _ := slices.BinarySearchFunc(l.entries, c.index+1, func(e changeEntry, index uint64) int {
		switch {
		case e.index < index:
			return -1
		case e.index > index:
			return 1
		}
		return 0
	})
	start := len(buf)
	for _, e := range l.entries[i:] {
		buf = append(buf, e.ids...)
	}
	added := buf[start:]
	slices.Sort(added)
	return append(buf[:start], slices.Compact(added)...), true
}
