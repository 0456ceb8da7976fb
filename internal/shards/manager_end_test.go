package shards

import (
	"errors"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// TestEndedOncePerLease: the Manager forgets every lease that ends and
// reports its end once (Options.Ended), with its cause, whatever ended it:
// the replica showing it free (Errors.Lost), a handoff (Errors.Revoked),
// its session's end (the session's cause, though nothing watches the
// lease's own context), Close (Errors.Shutdown).
func TestEndedOncePerLease(t *testing.T) {
	rig := newMgrRig(t, 8)
	ends := make(chan struct {
		shard ShardID
		cause error
	}, 100)
	rig.m.o.Ended = func(l *Lease, cause error) {
		ends <- struct {
			shard ShardID
			cause error
		}{l.Shard(), cause}
	}
	want := map[ShardID]error{}
	wait := func(n int) {
		t.Helper()
		for range n {
			select {
			case e := <-ends:
				if w, ok := want[e.shard]; !ok || !errors.Is(e.cause, w) {
					t.Fatalf("shard %d reported ended with %v; want once, with %v", e.shard, e.cause, w)
				}
				delete(want, e.shard)
			case <-time.After(10 * time.Second):
				t.Fatalf("no end reported in 10s; still expected %v", want)
			}
		}
	}
	s1 := rig.open("s1", time.Hour)
	rig.grant("s1", 0, 1, 2, 3)
	rig.sync()
	for range 4 {
		rig.next(rig.acquired, "Acquire")
	}
	sh, _ := rig.view().Shard(0)
	rig.revoke(0)
	rig.mustApply(fsm.Command{Op: fsm.OpShardRelease, Shard: &fsm.ShardCmd{Force: true,
		Items: []fsm.ShardItem{{Shard: 0, Session: "s1", Token: sh.Token}}}})
	want[0] = errLost
	rig.sync()
	wait(1)
	rig.revoke(1)
	want[1] = errRevoked
	rig.sync()
	rig.next(rig.released, "Release")
	wait(1)
	want[2], want[3] = session.ErrExpired, session.ErrExpired
	s1.End(session.ErrExpired)
	wait(2)
	testkit.Eventually(t, "every lease forgotten", 10*time.Second, testkit.Holds(func() bool { leases, _, _ := rig.m.state(); return leases == 0 }))
	rig.open("s2", time.Hour)
	rig.grant("s2", 4)
	rig.sync()
	rig.next(rig.acquired, "Acquire")
	want[4] = errShutdown
	rig.m.Close()
	wait(1)
	select {
	case e := <-ends:
		t.Fatalf("an extra end reported: shard %d, %v", e.shard, e.cause)
	default:
	}
}
