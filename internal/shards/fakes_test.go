package shards

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
)

// replica is a fake raft: commands are applied at once, in order, to a
// real fsm.FSM.
type replica struct {
	t     testing.TB
	f     *fsm.FSM
	mu    sync.Mutex
	index uint64
	fail  error // returned by every apply while set
}

func newReplica(t testing.TB, shards int) *replica {
	r := &replica{t: t, f: fsm.New()}
	r.mustApply(fsm.Command{Op: fsm.OpInitCluster, Init: &fsm.InitCluster{ClusterID: "c", Shards: uint32(shards), Voters: 1}})
	return r
}

// apply commits cmd; a command the FSM rejects is an error, as raft's
// callers see it.
func (r *replica) apply(_ context.Context, cmd fsm.Command) (Applied, error) {
	data, err := fsm.Encode(cmd)
	if err != nil {
		r.t.Errorf("encoding %s: %v", cmd.Op, err)
		return Applied{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return Applied{}, r.fail
	}
	r.index++
	res := r.f.Apply(&raft.Log{Index: r.index, Type: raft.LogCommand, Data: data}).(fsm.Result)
	if res.Err != nil {
		return Applied{Index: r.index}, res.Err
	}
	return Applied{Index: r.index, Count: res.Count}, nil
}

func (r *replica) mustApply(cmd fsm.Command) Applied {
	r.t.Helper()
	a, err := r.apply(context.Background(), cmd)
	if err != nil {
		r.t.Fatalf("%s: %v", cmd.Op, err)
	}
	return a
}

func (r *replica) view() *fsm.View { return r.f.View() }

// session creates a session of weight 1 on node "n-<id>".
func (r *replica) session(id string, ttl time.Duration, drained bool) {
	r.t.Helper()
	r.mustApply(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: id, Node: "n-" + id, NodeID: "n-" + id,
		TTLNanos: int64(ttl), Addr: id + ":1", Weight: 1, Drain: drained}})
}

// drain sets session s's drained flag.
func (r *replica) drain(s string) {
	r.t.Helper()
	r.mustApply(fsm.Command{Op: fsm.OpSessionDrain, Session: &fsm.SessionCmd{ID: s, Drain: true}})
}

// grant grants the shards to session s.
func (r *replica) grant(s string, ids ...uint32) {
	r.t.Helper()
	items := make([]fsm.ShardItem, len(ids))
	for i, id := range ids {
		items[i] = fsm.ShardItem{Shard: id, Session: s}
	}
	r.mustApply(fsm.Command{Op: fsm.OpShardGrant, Shard: &fsm.ShardCmd{Items: items}})
}

// release commits the owner's release of a shard.
func (r *replica) release(id uint32) {
	r.t.Helper()
	sh, _ := r.view().Shard(id)
	r.mustApply(fsm.Command{Op: fsm.OpShardRelease, Shard: &fsm.ShardCmd{Items: []fsm.ShardItem{{Shard: id, Session: sh.Owner, Token: sh.Token}}}})
}

// revoke commits the leader's revoke of a shard.
func (r *replica) revoke(id uint32) {
	r.t.Helper()
	sh, _ := r.view().Shard(id)
	r.mustApply(fsm.Command{Op: fsm.OpShardRevoke, Shard: &fsm.ShardCmd{Items: []fsm.ShardItem{{Shard: id, Session: sh.Owner, Token: sh.Token}}}})
}

// count returns, per owner, how many shards are owned and revoking.
func count(v *fsm.View) (owned, revoking map[string]int, free int) {
	owned, revoking = map[string]int{}, map[string]int{}
	v.EachShard(func(s fsm.Shard) bool {
		switch s.State {
		case fsm.ShardFree:
			free++
		case fsm.ShardOwned:
			owned[s.Owner]++
		case fsm.ShardRevoking:
			revoking[s.Owner]++
		}
		return true
	})
	return owned, revoking, free
}

func revokingShards(v *fsm.View) []uint32 {
	var out []uint32
	v.EachShard(func(s fsm.Shard) bool {
		if s.State == fsm.ShardRevoking {
			out = append(out, s.ID)
		}
		return true
	})
	return out
}

func describe(v *fsm.View) string {
	o, r, f := count(v)
	return fmt.Sprintf("owned %v revoking %v free %d", o, r, f)
}
