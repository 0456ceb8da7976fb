package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
)

// TestHealthFromCurrentLeaderOnly: a node keeps the health verdict of the
// leader of its current term or a later one, never one from a deposed
// leader; a leader hands out only its own verdict of the current term.
func TestHealthFromCurrentLeaderOnly(t *testing.T) {
	clk, net := testkit.NewClock(time.Unix(1_000_000, 0)), newFakeNet()
	lead := newTestNode(t, "a", net, clk, nil)
	follower := newTestNode(t, "b", net, clk, nil)
	lead.raft.term, follower.raft.term = 5, 5
	state := &autopilot.State{Leader: "id-a", FailureTolerance: 1, Voters: []raft.ServerID{"id-b", "id-a"},
		Servers: map[raft.ServerID]*autopilot.ServerState{
			"id-a": {Server: autopilot.Server{ID: "id-a", Name: "a"}, Health: autopilot.ServerHealth{Healthy: true}},
			"id-b": {Server: autopilot.Server{ID: "id-b", Name: "b"}, Health: autopilot.ServerHealth{Healthy: false}},
		}}
	lead.o.Metrics = NewMetrics()
	lead.o.Metrics.healthy.Set(1)
	(&pilotDelegate{cl: lead.Cluster}).NotifyState(state)
	if gotHealthy, gotTolerance := testutil.ToFloat64(lead.o.Metrics.healthy), testutil.ToFloat64(lead.o.Metrics.failureTolerance); gotHealthy != 0 || gotTolerance != 1 {
		t.Errorf("metrics hook got healthy %v, tolerance %v; want 0, 1", gotHealthy, gotTolerance)
	}
	rep := lead.leaderHealth()
	if rep == nil || rep.Leader != "id-a" || len(rep.Voters) != 2 || rep.Voters[0].Name != "a" || rep.Voters[1].Healthy {
		t.Fatalf("leader's verdict: %+v, want a's, voters sorted by name, b unhealthy", rep)
	}
	// The stats poll carries it to the follower.
	var reply wire.StatsReply
	if err := net.Call(context.Background(), addrOf("b"), wire.MethodStats, wire.StatsRequest{Health: rep}, &reply); err != nil {
		t.Fatal(err)
	}
	if got, at, ok := follower.Health(); !ok || got.Leader != "id-a" || !at.Equal(clk.Time()) {
		t.Fatalf("follower's health: %+v at %v (%v), want a's verdict now", got, at, ok)
	}
	// A deposed leader's verdict (older term) is ignored.
	follower.raft.term = 6
	old := *rep
	old.Leader = "id-c"
	follower.noteHealth(&old)
	if got, _, _ := follower.Health(); got.Leader != "id-a" {
		t.Errorf("follower kept a deposed leader's verdict: %+v", got)
	}
	// In a new term the old leader hands out nothing of its own.
	lead.raft.term = 6
	if rep := lead.leaderHealth(); rep != nil {
		t.Errorf("leader hands out last term's verdict: %+v", rep)
	}
}

// TestLoopsJoinedOnClose: the part's goroutines (member events, cluster ID,
// formation logs, bootstrap, the join retry after a failed first join, and
// a Lead) all end when Close returns (the package's leak check fails the
// run otherwise), and Lead after Close does not start autopilot.
func TestLoopsJoinedOnClose(t *testing.T) {
	n := newTestNode(t, "a", newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0)), func(o *Options) {
		o.Join = []string{"seed:1"}
		o.ReconcileInterval = time.Millisecond
	})
	n.members.joinErr = errors.New("connection refused")
	leaderOf(n, "a")
	if err := n.Join(context.Background(), n.members); err != nil {
		t.Fatalf("a failed first join: %v, want retried in the background", err)
	}
	n.Start()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.Lead(context.Background()) // ends with Close
	}()
	n.Close()
	wg.Wait()
	n.Lead(context.Background()) // after Close: returns at once
	dup := newTestNode(t, "b", newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0)), func(o *Options) { o.Join = []string{"seed:1"} })
	dup.members.joinErr = membership.ErrDuplicateName
	if err := dup.Join(context.Background(), dup.members); !errors.Is(err, membership.ErrDuplicateName) {
		t.Errorf("duplicate name: %v, want ErrDuplicateName", err)
	}
}
