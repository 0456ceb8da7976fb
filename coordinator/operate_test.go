package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestReleaseLeaseWithoutItsHolder: an operator releases a lease whose
// holder's node is cut off: the leader commits the release without it
// (Graceful false, the message says what that means), another node then
// acquires the lease with a larger token, and the fence refuses the old
// holder's write once the new holder has written, although the old holder
// may still believe it holds the lease.
func TestReleaseLeaseWithoutItsHolder(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(formTimeout)
	var holder, other *holdfasttest.Node
	for _, n := range cl.Running() {
		switch {
		case n == leader:
		case holder == nil:
			holder = n
		default:
			other = n
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	old, err := holder.C().Acquire(ctx, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	mem := fence.NewMemory(fence.MemoryConfig{})
	cl.Isolate(holder.Index)
	res, err := other.C().Operate(ctx, coordinator.Operation{Action: coordinator.ActionReleaseLease, Target: "stuck", By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Graceful || res.Token != old.Token() || res.Node.Name != holder.Name || res.Leader.Name != leader.Name {
		t.Fatalf("release without the holder's node: %+v", res)
	}
	t.Log(res.Message)
	l, err := other.C().Acquire(ctx, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() <= old.Token() {
		t.Fatalf("next grant token %d, not above the released %d", l.Token(), old.Token())
	}
	if err := mem.Do("stuck", l.Token(), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := mem.Do("stuck", old.Token(), func() error { return nil }); !errors.Is(err, fence.ErrFenced) {
		t.Errorf("the old holder's write after the release: %v, want ErrFenced", err)
	}
	_, err = other.C().Operate(ctx, coordinator.Operation{Action: "elect", Target: "x"})
	if !errors.Is(err, coordinator.ErrOperationRefused) {
		t.Errorf("an unknown action: %v", err)
	}
}

// TestShutdownKeepsVoteRestartVotesAtOnce is the deploy that used to end
// in an outage: a follower voter of three shuts down gracefully (a
// restart), and while it is down the raft leader crashes. The stopped node
// is still a voter, so once it is back it and the third voter form a
// quorum and elect a leader at once, and its replica catches up; under the
// old rule its Shutdown had removed it, leaving a configuration of the
// crashed leader and the third voter that nobody could change.
func TestShutdownKeepsVoteRestartVotesAtOnce(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout)
	restarted := voterIndex(t, cl, leader)
	id := cl.Node(restarted).C().ID()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := cl.Stop(ctx, restarted); err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
	next := cl.WaitLeader(formTimeout)
	if voters := next.C().Voters(); len(voters) != 3 || !slices.Contains(voters, id) {
		t.Fatalf("after the graceful shutdown the voters are %v: want the stopped node still among 3", voters)
	}
	crashed := next.Index
	applied := next.C().AppliedIndex()
	cl.Kill(crashed)
	cl.Start(restarted)
	back := cl.WaitLeader(formTimeout)
	if back.Index == crashed {
		t.Fatalf("leader %s is the crashed node", back.Name)
	}
	cl.WaitFor("the restarted voter caught up", formTimeout, func() error {
		if got := cl.Node(restarted).C().AppliedIndex(); got < applied {
			return fmt.Errorf("%w: applied %d of %d", holdfasttest.ErrNotYet, got, applied)
		}
		return nil
	})
	sctx, scancel := context.WithTimeout(context.Background(), formTimeout)
	defer scancel()
	if err := cl.Node(restarted).C().Sync(sctx); err != nil {
		t.Fatalf("Sync on the restarted voter with the leader crashed: %v", err)
	}
	if voters := back.C().Voters(); len(voters) != 3 {
		t.Errorf("voters %v, want 3 (the crashed one keeps its vote)", voters)
	}
	cl.Start(crashed)
	cl.WaitFor("all three back", formTimeout, cl.Formed)
}

// TestLeavePromotesReplacementFirst: a follower voter's Leave has the
// eligible non-voter promoted before the leaver is removed, then stops the
// node; no configuration in a survivor's raft log has fewer than 3 voters.
func TestLeavePromotesReplacementFirst(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 4, Voters: 3})
	leader := cl.WaitFormed(formTimeout)
	waitSuffrages(t, cl, 3, 1)
	i := voterIndex(t, cl, leader)
	c := cl.Node(i).C()
	id := c.ID()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := c.Leave(ctx, coordinator.LeaveOptions{}); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Error("Done not closed after Leave returned")
	}
	if err := c.Ready(); !errors.Is(err, coordinator.ErrShutdown) {
		t.Errorf("Ready after Leave: %v, want ErrShutdown", err)
	}
	if err := c.Leave(ctx, coordinator.LeaveOptions{}); !errors.Is(err, coordinator.ErrShutdown) {
		t.Errorf("a second Leave: %v, want ErrShutdown", err)
	}
	cl.Kill(i)
	next := cl.WaitLeader(formTimeout)
	voters := next.C().Voters()
	if len(voters) != 3 || slices.Contains(voters, id) {
		t.Fatalf("voters after the leave: %v; want 3 without the leaver", voters)
	}
	cl.Kill(next.Index)
	hist, err := holdfasttest.VoterHistory(next.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	for n, v := range hist {
		if len(v) < 3 {
			t.Errorf("configuration %d of %s's log has %d voters: %v", n, next.Name, len(v), v)
		}
	}
}

// TestLeaveRefusedWithoutReplacement: with three voters and no other node,
// a follower's Leave is refused (the node keeps running and voting) and a
// Shutdown after it still works; the leader's forced Leave hands
// leadership over and removes it: two voters serve on.
func TestLeaveRefusedWithoutReplacement(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout)
	f := voterIndex(t, cl, leader)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	// Formed is not ready: the follower's first session may still be on
	// its way, and the check below is that the refusal leaves it ready.
	if err := cl.Node(f).C().WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	err := cl.Node(f).C().Leave(ctx, coordinator.LeaveOptions{})
	if !errors.Is(err, coordinator.ErrLeaveRefused) {
		t.Fatalf("Leave with no replacement: %v, want ErrLeaveRefused", err)
	}
	t.Logf("refusal: %v", err)
	if err := cl.Node(f).C().Ready(); err != nil {
		t.Errorf("the refused leaver is not ready: %v", err)
	}
	if v := leader.C().Voters(); len(v) != 3 {
		t.Errorf("voters after a refused leave: %v", v)
	}
	id := leader.C().ID()
	if err := leader.C().Leave(ctx, coordinator.LeaveOptions{Force: true}); err != nil {
		t.Fatalf("forced Leave of the leader: %v", err)
	}
	cl.Kill(leader.Index)
	next := cl.WaitLeader(formTimeout)
	if v := next.C().Voters(); len(v) != 2 || slices.Contains(v, id) {
		t.Fatalf("voters after the forced leave: %v; want the two others", v)
	}
	if err := next.C().Sync(ctx); err != nil {
		t.Errorf("Sync with two voters: %v", err)
	}
	// Two voters of two left: removing one would leave one of one healthy,
	// a quorum, but fewer than Voters: refused unless forced.
	other := voterIndex(t, cl, next)
	if err := cl.Node(other).C().Leave(ctx, coordinator.LeaveOptions{}); !errors.Is(err, coordinator.ErrLeaveRefused) {
		t.Errorf("Leave of one of two voters: %v, want ErrLeaveRefused", err)
	}
	if err := cl.Stop(ctx, other); err != nil {
		t.Errorf("Shutdown after a refused Leave: %v", err)
	}
}

// TestShutdownWithoutQuorum kills two of three voters and at once shuts
// the third down: its shard handoff and session close cannot commit, so
// they are skipped, one log line each, once no raft leader has been known
// for Config.ShutdownWithoutLeader (or at once, if gossip already shows
// the two dead), and Shutdown returns nil. It used to wait 2 × TTL + drain
// for the handoff and then the session's close, and return (and log, in
// one line with a literal newline) two context deadline errors.
func TestShutdownWithoutQuorum(t *testing.T) {
	t.Parallel()
	logs := &levelCapture{}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true, Configure: func(i int, c *coordinator.Config) {
		if i == 0 {
			c.Logger = slog.New(logs)
			c.ShutdownWithoutLeader = time.Second
		}
	}})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	cl.WaitFor("node0 to own a shard", formTimeout, func() error {
		if len(c.Owned()) == 0 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	cl.Kill(1)
	cl.Kill(2)
	if err := cl.Stop(context.Background(), 0); err != nil {
		t.Fatalf("Shutdown without a quorum: %v, want nil (the steps that cannot commit are skipped)", err)
	}
	for _, step := range []string{"handing shards off", "closing the session"} {
		recs := logs.withPrefix("shutdown: skipped " + step + ": ")
		if len(recs) != 1 {
			t.Errorf("%d lines for skipping %s, want 1", len(recs), step)
			continue
		}
		msg := recs[0].Message
		if !strings.HasSuffix(msg, ": no raft leader known for 1s (Config.ShutdownWithoutLeader)") &&
			!strings.HasSuffix(msg, ": gossip shows no quorum of voters alive") {
			t.Errorf("skip line %q: want the reason", msg)
		}
		t.Log(msg)
	}
	for _, r := range logs.withPrefix("") {
		if strings.Contains(r.Message, "\n") || (r.Level >= slog.LevelWarn && strings.HasPrefix(r.Message, "shutdown:")) {
			t.Errorf("shutdown logged %v %q", r.Level, r.Message)
		}
	}
}
