package coordinator_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

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
