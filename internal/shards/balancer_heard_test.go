package shards

import (
	"testing"
	"time"
)

// TestUnheardSessionGetsNoShards: a session this leader has heard no
// keepalive from (a create that committed after its caller gave up, or a
// session an earlier leader knew) is given no shard, however long ago it
// was created and even when it is the only session; once heard from it is
// given its share at once. An unheard owner keeps what it owns: a new
// leader does not take shards from sessions whose first keepalive has not
// arrived yet.
func TestUnheardSessionGetsNoShards(t *testing.T) {
	heard := map[string]bool{}
	rig := newBalancerRig(t, 8, BalancerOptions{JoinStabilization: time.Second, MaxMoves: 8})
	rig.o.Heard = func(s string) bool { return heard[s] }
	rig.session("owner", ttl, false)
	rig.grant("owner", 0, 1, 2, 3)
	rig.session("orphan", ttl, false)
	rig.start()
	rig.round(0, true)
	rig.round(10*time.Second, false)
	if owned, rev, free := count(rig.view()); owned["owner"] != 4 || owned["orphan"] != 0 || len(rev) != 0 || free != 4 {
		t.Fatalf("nobody heard from: %s; want the owner's 4 kept, nothing granted", describe(rig.view()))
	}
	heard["owner"] = true
	rig.round(time.Millisecond, false)
	if owned, _, _ := count(rig.view()); owned["owner"] != 8 || owned["orphan"] != 0 {
		t.Fatalf("the owner heard from: %s; want every shard its own, none the orphan's", describe(rig.view()))
	}
	heard["orphan"] = true // its node is alive after all
	rig.round(time.Millisecond, false)
	rig.round(time.Millisecond, false)
	if _, rev, _ := count(rig.view()); rev["owner"] == 0 {
		t.Fatalf("the second session heard from: %s; want shards moving to it", describe(rig.view()))
	}
}
