package shards

import (
	"slices"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/shardown"
)

// table is the balancer's running picture of the shard table between
// rounds: each shard's state, the count of free shards, and the planner's
// input (current owner among the members). A round brings it up to date
// from the shards that changed since the last round (fsm.View.ShardChanges),
// so its cost follows the shards that moved, not the table's size; it reads
// the whole table only on the term's first round, when the replica cannot
// say what changed, or when the members changed.
type table struct {
	cursor  fsm.ShardCursor
	state   []fsm.ShardState
	free    int
	changed []uint32 // the shards changed since the last round
	all     bool     // the last update read the whole table

	current []string           // planner input: each shard's owner among members ("" if none)
	members []string           // the sorted member IDs current was built for
	moved   []shardown.ShardID // changed, as the planner takes them
}

// update brings the picture to v: afterwards changed lists the shards
// that changed since the last update, unless all says every shard must be
// taken as changed.
func (t *table) update(v *fsm.View) {
	n := v.ShardCount()
	if len(t.state) == n {
		if ids, ok := v.ShardChanges(t.cursor, t.changed[:0]); ok {
			t.changed, t.cursor, t.all = ids, v.ShardCursor(), false
			for _, id := range ids {
				sh, _ := v.Shard(id)
				t.set(id, sh.State)
			}
			return
		}
	}
	t.cursor, t.all, t.changed = v.ShardCursor(), true, t.changed[:0]
	t.state, t.free = slices.Grow(t.state[:0], n)[:n], 0
	v.EachShard(func(s fsm.Shard) bool {
		t.state[s.ID] = s.State
		if s.State == fsm.ShardFree {
			t.free++
		}
		return true
	})
}

func (t *table) set(id uint32, st fsm.ShardState) {
	if old := t.state[id]; old != st {
		if old == fsm.ShardFree {
			t.free--
		} else if st == fsm.ShardFree {
			t.free++
		}
		t.state[id] = st
	}
}

// each calls fn for every shard to be taken as changed since the last
// update: the changed ones, or all of v's.
func (t *table) each(v *fsm.View, fn func(fsm.Shard)) {
	if t.all {
		v.EachShard(func(s fsm.Shard) bool { fn(s); return true })
		return
	}
	for _, id := range t.changed {
		s, _ := v.Shard(id)
		fn(s)
	}
}

// planInput returns the planner's current table for members, and the
// shards that changed since the previous call (all: plan from scratch).
func (t *table) planInput(v *fsm.View, members map[string]shardown.Member) (current []string, moved []shardown.ShardID, all bool) {
	ids := make([]string, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	n := v.ShardCount()
	all = t.all || len(t.current) != n || !slices.Equal(ids, t.members)
	t.members = ids
	if all {
		t.current = slices.Grow(t.current[:0], n)[:n]
		v.EachShard(func(s fsm.Shard) bool {
			t.current[s.ID] = currentOwner(s, members)
			return true
		})
		return t.current, nil, true
	}
	t.moved = t.moved[:0]
	for _, id := range t.changed {
		s, _ := v.Shard(id)
		t.current[id] = currentOwner(s, members)
		t.moved = append(t.moved, shardown.ShardID(id))
	}
	return t.current, t.moved, false
}

// currentOwner is a shard's owner as the planner sees it: the owner of an
// owned shard, the target of a revoking one, if a member; else none.
func currentOwner(s fsm.Shard, members map[string]shardown.Member) string {
	var who string
	switch s.State {
	case fsm.ShardOwned:
		who = s.Owner
	case fsm.ShardRevoking:
		who = s.To
	default:
		return ""
	}
	if _, ok := members[who]; ok {
		return who
	}
	return ""
}
