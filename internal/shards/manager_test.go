package shards

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// TestGrantStartsLeaseAcquireOnce: a grant to this node's session in the
// view starts one lease and one Acquire call, however often the manager
// syncs; a later grant of the same shard (new token) starts a new lease.
func TestGrantStartsLeaseAcquireOnce(t *testing.T) {
	rig := newMgrRig(t, 8)
	rig.open("s1", time.Hour)
	rig.grant("s1", 3)
	rig.sync()
	l := rig.next(rig.acquired, "Acquire")
	sh, _ := rig.view().Shard(3)
	if l.Shard() != 3 || l.Token() != sh.Token || l.Belief().Cause() != nil {
		t.Fatalf("lease: shard %d token %d (cause %v); want shard 3 token %d, live", l.Shard(), l.Token(), l.Belief().Cause(), sh.Token)
	}
	rig.sync()
	rig.grant("s1", 5) // a new view, with the same grant of 3
	rig.sync()
	if l5 := rig.next(rig.acquired, "Acquire"); l5.Shard() != 5 {
		t.Fatalf("second Acquire for shard %d, want 5", l5.Shard())
	}
	rig.none(rig.acquired, "Acquire")
	if owned := rig.m.Owned(); len(owned) != 2 || owned[0] != l || owned[1].Shard() != 5 || rig.m.Count() != 2 {
		t.Fatalf("Owned %v, Count %d; want the leases of 3 and 5", owned, rig.m.Count())
	}
}

// TestOtherOwnerEndsLease: a lease ends (Errors.Lost) once the replica
// shows its shard free or owned under another token, and is not started
// again from an older view.
func TestOtherOwnerEndsLease(t *testing.T) {
	rig := newMgrRig(t, 4)
	rig.open("s1", time.Hour)
	rig.grant("s1", 0)
	granted := rig.view()
	rig.sync()
	l := rig.next(rig.acquired, "Acquire")
	rig.revoke(0)
	rig.mustApply(fsm.Command{Op: fsm.OpShardRelease, Shard: &fsm.ShardCmd{Force: true,
		Items: []fsm.ShardItem{{Shard: 0, Session: "s1", Token: l.Token()}}}})
	rig.m.Sync(rig.view(), nil) // the manager sees the free shard before the revoke
	if err := ended(t, l); !errors.Is(err, errLost) {
		t.Fatalf("lease ended with %v, want Errors.Lost", err)
	}
	s, _ := rig.session()
	rig.m.Sync(granted, s) // an older view still shows the grant
	testkit.Eventually(t, "forgotten", 10*time.Second, testkit.Holds(func() bool { return rig.m.Count() == 0 }))
	rig.none(rig.acquired, "Acquire")
}

// TestRevokeReleasesThenCommits: a revoke calls Release while the lease
// still holds, then ends the lease (Errors.Revoked) and commits the
// owner's release, freeing the shard.
func TestRevokeReleasesThenCommits(t *testing.T) {
	rig := newMgrRig(t, 4)
	rig.open("s1", time.Hour)
	rig.grant("s1", 2)
	rig.sync()
	l := rig.next(rig.acquired, "Acquire")
	type seen struct {
		cause error
		state fsm.ShardState
	}
	during := make(chan seen, 1)
	rig.release = func(_ context.Context, l *Lease) error {
		sh, _ := rig.view().Shard(2)
		during <- seen{l.Belief().Cause(), sh.State}
		return nil
	}
	rig.revoke(2)
	rig.sync()
	select {
	case <-l.Revoked():
	default:
		t.Fatal("Revoked not closed after the revoke was synced")
	}
	if r := rig.next(rig.released, "Release"); r != l {
		t.Fatalf("Release for shard %d, want the lease of 2", r.Shard())
	}
	if d := <-during; d.cause != nil || d.state != fsm.ShardRevoking {
		t.Fatalf("during Release: cause %v, shard %v; want a live lease and the shard still revoking", d.cause, d.state)
	}
	if err := ended(t, l); !errors.Is(err, errRevoked) {
		t.Fatalf("lease ended with %v, want Errors.Revoked", err)
	}
	testkit.Eventually(t, "released", 10*time.Second, testkit.Holds(func() bool {
		sh, _ := rig.view().Shard(2)
		_, releasing, _ := rig.m.state()
		return sh.State == fsm.ShardFree && releasing == 0
	}))
	rig.sync()
	rig.none(rig.acquired, "Acquire")
}

// TestRevokedBeforeBelieved: a shard revoked before this node ever saw it
// granted is released at once, without Acquire or Release.
func TestRevokedBeforeBelieved(t *testing.T) {
	rig := newMgrRig(t, 4)
	rig.open("s1", time.Hour)
	rig.grant("s1", 1)
	rig.revoke(1)
	rig.sync()
	testkit.Eventually(t, "released", 10*time.Second, testkit.Holds(func() bool { sh, _ := rig.view().Shard(1); return sh.State == fsm.ShardFree }))
	rig.none(rig.acquired, "Acquire")
	rig.none(rig.released, "Release")
}

// TestSessionEndEndsEveryLease: when the session ends, every lease under
// it ends with the session's cause, and a new session does not take over
// shards the replica still shows under the old one.
func TestSessionEndEndsEveryLease(t *testing.T) {
	rig := newMgrRig(t, 4)
	s1 := rig.open("s1", time.Hour)
	rig.grant("s1", 0, 1, 2)
	rig.sync()
	ls := []*Lease{rig.next(rig.acquired, "Acquire"), rig.next(rig.acquired, "Acquire"), rig.next(rig.acquired, "Acquire")}
	s1.End(session.ErrExpired)
	for _, l := range ls {
		if err := ended(t, l); !errors.Is(err, session.ErrExpired) {
			t.Fatalf("shard %d ended with %v, want the session's cause", l.Shard(), err)
		}
	}
	testkit.Eventually(t, "no lease", 10*time.Second, testkit.Holds(func() bool { return rig.m.Count() == 0 }))
	rig.open("s2", time.Hour)
	rig.sync()
	rig.none(rig.acquired, "Acquire")
}

// TestRevokedLeaseBeliefCapped: once a revoke is seen, keepalives no
// longer extend the lease: it ends (Errors.Lost) at the session deadline
// it had then, while the session and an unrevoked lease live on.
func TestRevokedLeaseBeliefCapped(t *testing.T) {
	rig := newMgrRig(t, 4)
	s := rig.open("s1", 10*time.Second)
	rig.grant("s1", 0, 1)
	rig.sync()
	a, b := rig.next(rig.acquired, "Acquire"), rig.next(rig.acquired, "Acquire")
	if a.Shard() != 0 {
		a, b = b, a
	}
	hold := make(chan struct{})
	rig.release = func(ctx context.Context, _ *Lease) error {
		select { // the handoff drains until the test lets it go
		case <-hold:
		case <-ctx.Done():
		}
		return nil
	}
	defer close(hold)
	rig.revoke(0)
	rig.sync()
	rig.next(rig.released, "Release")
	s.Extend(time.Now().Add(20*time.Second), 20*time.Second) // a keepalive answered after the revoke
	rig.clk.Set(10*time.Second - time.Millisecond)
	if left := a.Belief().Observe(); left != time.Millisecond {
		t.Fatalf("revoked lease has %v left 1ms before the cap, want 1ms", left)
	}
	rig.clk.Set(10 * time.Second)
	if left := a.Belief().Observe(); left != 0 || !errors.Is(a.Belief().Cause(), errLost) {
		t.Fatalf("revoked lease at its cap: %v left, cause %v; want ended with Errors.Lost", left, a.Belief().Cause())
	}
	if s.Remaining() <= 0 || b.Belief().Observe() != 10*time.Second || b.Belief().Cause() != nil {
		t.Fatalf("session valid %v, unrevoked lease %v left (cause %v); want both to hold 10s more",
			s.Remaining() > 0, b.Belief().Observe(), b.Belief().Cause())
	}
}

// TestDrainFlagAndSessions: SetDrained commits the flag for the current
// session and stamps it on later sessions; a session the cluster no longer
// knows is ended and the flag goes to the next one.
func TestDrainFlagAndSessions(t *testing.T) {
	rig := newMgrRig(t, 4)
	s1 := session.New(context.Background(), "gone", ttl, rig.clk, time.Hour) // not in the replica
	rig.mu.Lock()
	rig.sess = s1
	rig.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- rig.m.SetDrained(context.Background(), true) }()
	<-s1.Context().Done() // the commit found no such session
	s2 := rig.open("s2", time.Hour)
	if err := <-done; err != nil {
		t.Fatalf("SetDrained: %v", err)
	}
	if got, _ := rig.view().Session(s2.ID()); !got.Drained {
		t.Fatal("the next session is not drained")
	}
	cmd := &fsm.SessionCmd{}
	rig.m.FillSessionCmd(cmd)
	if !cmd.Drain || cmd.Addr != "node:1" || cmd.Weight != 2 {
		t.Fatalf("new session fields %+v, want drained, node:1, weight 2", cmd)
	}
}

// TestWaitNoShards: WaitNoShards returns once neither the replica nor the
// manager shows a shard of this node (a release still being committed
// counts), and fails with ctx's error before that. It returns when the
// release's commit finishes even if the replica does not change again (a
// drained node alone: nobody takes the freed shard).
func TestWaitNoShards(t *testing.T) {
	rig := newMgrRig(t, 4)
	rig.open("s1", time.Hour)
	rig.grant("s1", 3)
	rig.sync()
	rig.next(rig.acquired, "Acquire")
	short, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := rig.m.WaitNoShards(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitNoShards with a shard owned: %v, want the deadline", err)
	}
	applied, finish := make(chan struct{}), make(chan struct{})
	var appliedOnce, finishOnce sync.Once
	finished := func() { finishOnce.Do(func() { close(finish) }) }
	defer finished() // a failing test does not leave the commit blocked
	rig.committed = func(cmd fsm.Command) {
		if cmd.Op == fsm.OpShardRelease {
			appliedOnce.Do(func() { close(applied) })
			<-finish // the release is in the replica, its commit not yet returned
		}
	}
	rig.m.Start()
	rig.revoke(3) // the running manager hands it off
	rig.next(rig.released, "Release")
	<-applied
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rig.m.WaitNoShards(ctx) }()
	testkit.Eventually(t, "the lease forgotten", 10*time.Second, testkit.Holds(func() bool { leases, _, _ := rig.m.state(); return leases == 0 }))
	select {
	case err := <-done:
		t.Fatalf("WaitNoShards returned %v while the release was being committed", err)
	default:
	}
	finished()
	if err := <-done; err != nil {
		t.Fatalf("WaitNoShards after the release's commit: %v", err)
	}
}

// TestCloseJoins: Close ends the leases (Errors.Shutdown) and returns only
// after the callbacks it started have returned.
func TestCloseJoins(t *testing.T) {
	rig := newMgrRig(t, 2)
	returned := make(chan struct{})
	rig.m.o.Serve = func(ctx context.Context, l *Lease) {
		rig.acquired <- l
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond) // a callback slow to return: Close must wait for it
		close(returned)
	}
	rig.open("s1", time.Hour)
	rig.grant("s1", 0)
	rig.m.Start()
	l := rig.next(rig.acquired, "Acquire")
	rig.m.Close()
	select {
	case <-returned:
	default:
		t.Fatal("Close returned before the Serve callback")
	}
	if err := context.Cause(l.Belief().Context()); !errors.Is(err, errShutdown) {
		t.Fatalf("lease ended with %v, want Errors.Shutdown", err)
	}
}
