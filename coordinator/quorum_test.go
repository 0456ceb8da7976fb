package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/internal/raftnode"
)

// memberFailedFor reports whether obs's gossip has said for at least d that
// the member with the given ID is failed.
func memberFailedFor(obs *coordinator.Coordinator, id string, d time.Duration) error {
	for _, m := range obs.Members() {
		if m.ID == id {
			if m.State == coordinator.MemberFailed && time.Since(m.Since) >= d {
				return nil
			}
			return fmt.Errorf("%w: %s %s for %v", holdfasttest.ErrNotYet, m.Name, m.State, time.Since(m.Since))
		}
	}
	return fmt.Errorf("%w: member %s unknown", holdfasttest.ErrNotYet, id)
}

// TestCutVoterKeepsVoteThenSecondFailureSurvived is the sequence that used
// to take a 3-voter group down: a follower voter cut off for long (gossip
// declares it failed well past DeadServerStabilization) with no node to
// replace it, healed, then the raft leader cut off. The cut voter must
// keep its vote throughout, so the second cut leaves two voters of three
// and a new leader.
func TestCutVoterKeepsVoteThenSecondFailureSurvived(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(formTimeout)
	victim := voterIndex(t, cl, leader)
	victimID := cl.Node(victim).C().ID()
	cfg := leader.C().Config()
	cl.Isolate(victim)
	// Wait well past the point where the old rule removed it: gossip has
	// reported it failed for DeadServerStabilization plus several
	// reconcile rounds. All the while it must stay a voter of three.
	hold := cfg.Cluster.DeadServerStabilization + 6*cfg.Cluster.ReconcileInterval
	cl.WaitFor("gossip to report the cut voter failed for long", formTimeout, func() error {
		voters := leader.C().Voters()
		if len(voters) != 3 || !slices.Contains(voters, victimID) {
			t.Fatalf("the cut voter lost its vote with no replacement: voters %v", voters)
		}
		return memberFailedFor(leader.C(), victimID, hold)
	})
	// Read from the leader of the moment, once it knows its health: a
	// stall of the machine can cost the leader its office for a moment.
	var g coordinator.GroupHealth
	cl.WaitFor("a leader that knows its health", formTimeout, func() error {
		l, err := cl.Leader()
		if err != nil {
			return err
		}
		if g = l.C().Health(); !g.Known {
			return fmt.Errorf("%s: health not known: %s", l.Name, g.Unknown)
		}
		return nil
	})
	if g.FailureTolerance != 0 {
		t.Errorf("leader's health with one voter cut: %+v, want known with tolerance 0", g)
	}
	healed := time.Now()
	cl.Heal()
	cl.WaitFor("every node to list the healed voter alive", formTimeout, func() error {
		for _, n := range cl.Running() {
			for _, m := range n.C().Members() {
				if m.ID == victimID && m.State != coordinator.MemberAlive {
					return fmt.Errorf("%w: %s sees it %s", holdfasttest.ErrNotYet, n.Name, m.State)
				}
			}
		}
		return nil
	})
	t.Logf("healed voter alive in every member list %v after the heal", time.Since(healed).Round(time.Millisecond))
	var others []int
	for _, n := range cl.Running() {
		if n != leader {
			others = append(others, n.Index)
		}
	}
	cut := time.Now()
	cl.Partition([]int{leader.Index}, others)
	cl.WaitFor("a new leader among the healed voter and the other", formTimeout, func() error {
		for _, i := range others {
			if cl.Node(i).C().RaftState() == coordinator.StateLeader {
				return nil
			}
		}
		return fmt.Errorf("%w: no leader among %v", holdfasttest.ErrNotYet, others)
	})
	t.Logf("new leader %v after the leader's cut", time.Since(cut).Round(time.Millisecond))
	cl.Heal()
	cl.WaitFor("one cluster again", formTimeout, cl.Formed)
}

// TestRecoverLostQuorum: three voters, two lost with their data dirs. The
// survivor's data dir is refused while it runs, then recovered offline to
// itself alone (the code holdfastctl data recover runs): started, it leads
// alone, the lease a lost node held passes to it with a larger token, and
// the lost nodes coming back as new identities are promoted until three
// voters serve again.
func TestRecoverLostQuorum(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 3*formTimeout)
	defer cancel()
	holder := voterIndex(t, cl, leader)
	l, err := cl.Node(holder).C().Acquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	before := l.Token()
	survivor := leader.Index
	if _, err := raftnode.OpenOffline(leader.DataDir); !errors.Is(err, raftnode.ErrDataDirLocked) {
		t.Fatalf("opening a running node's data dir: %v, want ErrDataDirLocked", err)
	}
	for i := range 3 {
		cl.Kill(i)
		if i != survivor {
			cl.Wipe(i)
		}
	}
	o, err := raftnode.OpenOffline(cl.Node(survivor).DataDir)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := o.State()
	if err != nil {
		o.Close()
		t.Fatal(err)
	}
	servers, err := raftnode.PlanRecovery(rs, o.ID, nil)
	if err == nil {
		err = o.Recover(servers, fsm.New())
	}
	o.Close()
	if err != nil {
		t.Fatalf("recovery: %v", err)
	}
	c := cl.Start(survivor)
	cl.WaitLeader(formTimeout)
	got, err := c.Acquire(ctx, "job") // the lost holder's session expires, the lease passes on
	if err != nil {
		t.Fatalf("Acquire on the recovered node: %v", err)
	}
	if got.Token() <= before {
		t.Errorf("token %d after the recovery, want more than %d (before)", got.Token(), before)
	}
	if v := c.Voters(); len(v) != 1 {
		t.Errorf("voters after the recovery: %v, want the survivor alone", v)
	}
	for i := range 3 {
		if i != survivor {
			cl.Start(i)
		}
	}
	waitSuffrages(t, cl, 3, 0)
	cl.WaitFor("one cluster of three", formTimeout, cl.Formed)
	for _, n := range cl.Running() {
		if id := n.C().ClusterID(); id != c.ClusterID() {
			t.Errorf("%s in cluster %s, want %s", n.Name, id, c.ClusterID())
		}
	}
	newcomer := cl.Node(holder).C()
	if err := newcomer.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if h, ok := newcomer.Holder("job"); !ok || h.Token != got.Token() {
		failUnlessEnded(t, got, "a new node sees holder %+v (%v), want token %d", h, ok, got.Token())
	}
}

// voterZones returns the zones of the leader's voters, as its gossip shows
// them.
func voterZones(l *coordinator.Coordinator) map[string]string {
	zone := map[string]string{}
	for _, m := range l.Members() {
		zone[m.ID] = m.Zone
	}
	out := map[string]string{}
	for _, v := range l.Voters() {
		out[v] = zone[v]
	}
	return out
}

// TestVotersSpreadOverZonesAndZoneLossSurvived starts six nodes in three
// zones, the first three in only two zones (so the cluster is bootstrapped
// with a doubled zone), waits for autopilot to spread the three voters over
// the three zones, then cuts a whole zone off and checks the rest keeps a
// leader and owns every shard.
func TestVotersSpreadOverZonesAndZoneLossSurvived(t *testing.T) {
	t.Parallel()
	zones := []string{"a", "a", "b", "b", "c", "c"}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 6, Voters: 3, InMemory: true,
		Configure: func(i int, c *coordinator.Config) { c.Zone = zones[i] }})
	cl.WaitFormed(formTimeout)
	var spread map[string]string
	cl.WaitFor("three voters in three distinct zones", formTimeout, func() error {
		l, err := cl.Leader()
		if err != nil {
			return err
		}
		spread = voterZones(l.C())
		distinct := map[string]bool{}
		for _, z := range spread {
			distinct[z] = true
		}
		if len(spread) != 3 || len(distinct) != 3 {
			return fmt.Errorf("%w: voters by zone %v", holdfasttest.ErrNotYet, spread)
		}
		// The leader lists its latest configuration, which may not have
		// reached the others yet (autopilot promotes the third zone's
		// node, then demotes the doubled zone's). A node whose log still
		// has four voters {a, a, b, c} needs three votes, which the cut
		// below leaves nobody: wait until every node's log has the spread.
		for _, n := range cl.Running() {
			if got := n.C().Voters(); !sameSet(got, spread) {
				return fmt.Errorf("%w: %s has voters %v, the leader %v", holdfasttest.ErrNotYet, n.Name, got, spread)
			}
		}
		return nil
	})
	t.Logf("voters by zone: %v", spread)
	lost := "a"
	var cut, rest []int
	for _, n := range cl.Running() {
		if zones[n.Index] == lost {
			cut = append(cut, n.Index)
		} else {
			rest = append(rest, n.Index)
		}
	}
	start := time.Now()
	cl.Partition(cut, rest)
	cl.WaitFor("a leader and every shard owned outside the lost zone", formTimeout, func() error {
		var l *coordinator.Coordinator
		for _, i := range rest {
			if c := cl.Node(i).C(); c.RaftState() == coordinator.StateLeader {
				l = c
			}
		}
		if l == nil {
			return fmt.Errorf("%w: no leader outside zone %s", holdfasttest.ErrNotYet, lost)
		}
		tab := l.Table()
		for s := range tab.Len() {
			o, ok := tab.Owner(coordinator.ShardID(s))
			if !ok || zoneOfNode(cl, o.Node.Name, zones) == lost {
				return fmt.Errorf("%w: shard %d owned by %q", holdfasttest.ErrNotYet, s, o.Node)
			}
		}
		return nil
	})
	t.Logf("zone %s lost: every shard owned by the other zones %v after the cut", lost, time.Since(start).Round(time.Millisecond))
}

// zoneOfNode is the zone of the node with the given name ("" if unknown).
func zoneOfNode(cl *holdfasttest.Cluster, name string, zones []string) string {
	for _, n := range cl.Nodes() {
		if n.Name == name {
			return zones[n.Index]
		}
	}
	return ""
}

// sameSet reports whether ids are exactly the keys of set.
func sameSet(ids []string, set map[string]string) bool {
	if len(ids) != len(set) {
		return false
	}
	for _, id := range ids {
		if _, ok := set[id]; !ok {
			return false
		}
	}
	return true
}
