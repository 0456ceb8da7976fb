package shards

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/shardown"
)

// TestBalancerTableFollowsChanges checks that the balancer's picture of
// the table, kept up to date from the shards changed since its last round,
// always matches a full read of the table (free count, revokes under way,
// the planner's input) and that planning from it gives the moves
// shardown.Plan gives on the whole table, while random grants, revokes,
// releases, session ends and joins change the table between rounds.
func TestBalancerTableFollowsChanges(t *testing.T) {
	const shards = 3000
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	r := newReplica(t, shards)
	sessions := []string{"a", "b", "c"}
	for _, s := range sessions {
		r.session(s, ttl, false)
	}
	b := NewBalancer(BalancerOptions{View: r.view, Apply: r.apply})
	p := shardown.Params{Shards: shards, MaxMovesInFlight: -1}
	for step := range 60 {
		mutate(t, r, rng, &sessions, step)
		v := r.view()
		b.table.update(v)
		b.trackRevokes(v, b.o.Now(), step == 0)
		members := map[string]shardown.Member{}
		for _, s := range sessions {
			members[s] = shardown.Member{ID: s, Weight: 1}
		}
		current, moved, all := b.table.planInput(v, members)
		ms := make([]shardown.Member, 0, len(members))
		for _, m := range members {
			ms = append(ms, m)
		}
		var got []shardown.Move
		var err error
		if all {
			got, err = b.planner.Plan(ms, current, p)
		} else {
			got, err = b.planner.PlanChanged(ms, current, moved, p)
		}
		if err != nil {
			t.Fatalf("step %d: planning: %v", step, err)
		}
		full := make([]string, shards)
		revoking := 0
		v.EachShard(func(s fsm.Shard) bool {
			full[s.ID] = currentOwner(s, members)
			if tr, ok := b.revokes[ShardID(s.ID)]; s.State == fsm.ShardRevoking && (!ok || tr.owner != s.Owner || tr.token != s.Token) {
				t.Fatalf("step %d: revoke of shard %d not tracked", step, s.ID)
			}
			if s.State == fsm.ShardRevoking {
				revoking++
			}
			return true
		})
		if !slices.Equal(current, full) || b.table.free != FreeShards(v) || len(b.revokes) != revoking {
			t.Fatalf("step %d: the picture differs from the table: free %d want %d, revokes %d want %d",
				step, b.table.free, FreeShards(v), len(b.revokes), revoking)
		}
		_, want, err := shardown.Plan(ms, full, p)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("step %d: %d moves, shardown.Plan gives %d (%v)", step, len(got), len(want), err)
		}
	}
}

// mutate changes the table at random: grants of free shards, revokes and
// releases of owned ones; now and then a session ends or one joins.
func mutate(t *testing.T, r *replica, rng *rand.Rand, sessions *[]string, step int) {
	t.Helper()
	switch {
	case step%20 == 7 && len(*sessions) > 2:
		end := (*sessions)[rng.IntN(len(*sessions))]
		*sessions = slices.DeleteFunc(*sessions, func(s string) bool { return s == end })
		r.mustApply(fsm.Command{Op: fsm.OpSessionExpire, Session: &fsm.SessionCmd{ID: end}})
	case step%20 == 13:
		s := fmt.Sprintf("j%d", step)
		r.session(s, ttl, false)
		*sessions = append(*sessions, s)
	}
	v := r.view()
	var grant, revoke, release []fsm.ShardItem
	v.EachShard(func(s fsm.Shard) bool {
		if rng.IntN(10) != 0 {
			return true
		}
		switch s.State {
		case fsm.ShardFree:
			grant = append(grant, fsm.ShardItem{Shard: s.ID, Session: (*sessions)[rng.IntN(len(*sessions))]})
		case fsm.ShardOwned:
			if rng.IntN(2) == 0 {
				revoke = append(revoke, fsm.ShardItem{Shard: s.ID, Session: s.Owner, Token: s.Token, To: (*sessions)[0]})
			} else {
				release = append(release, fsm.ShardItem{Shard: s.ID, Session: s.Owner, Token: s.Token})
			}
		case fsm.ShardRevoking:
			release = append(release, fsm.ShardItem{Shard: s.ID, Session: s.Owner, Token: s.Token})
		}
		return true
	})
	ops := []fsm.Op{fsm.OpShardGrant, fsm.OpShardRevoke, fsm.OpShardRelease}
	for i, items := range [][]fsm.ShardItem{grant, revoke, release} {
		for _, chunk := range chunkItems(items) {
			r.mustApply(fsm.Command{Op: ops[i], Shard: &fsm.ShardCmd{Items: chunk}})
		}
	}
}
