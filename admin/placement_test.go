package admin_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// checkPlacement: the leader's /v1/status shows the balancer's latest
// round (by count here: no shard reports load), each node with its
// capacity and a target of 16/3 shards; a follower's shows none.
func checkPlacement(t *testing.T, cl *holdfasttest.Cluster) {
	var st admin.Status
	cl.WaitFor("the leader's placement", settle, func() error {
		leader, err := cl.Leader()
		if err != nil {
			return err
		}
		st = admin.Status{}
		if err := getJSON(serve(t, leader.C()).URL+"/v1/status", &st); err != nil {
			return err
		}
		if p := st.Placement; p == nil || len(p.Nodes) != 3 || st.RaftState != "leader" {
			return fmt.Errorf("%w: placement %+v", holdfasttest.ErrNotYet, p)
		}
		// Every node's line, once all three are eligible (a session the
		// leader has not heard from yet, or still joining, has no target).
		for _, n := range st.Placement.Nodes {
			if !n.Eligible || math.Abs(n.Target-16.0/3) > 1e-9 {
				return fmt.Errorf("%w: node line %+v", holdfasttest.ErrNotYet, n)
			}
			if n.Capacity != 1 || n.Node == "" || n.Session == "" {
				t.Fatalf("node line %+v; want capacity 1, a node and a session", n)
			}
		}
		return nil
	})
	if st.Placement.ByLoad {
		t.Fatal("by_load without load reports")
	}
	for _, n := range cl.Running() {
		if n.Name == st.Name {
			continue
		}
		var fs admin.Status
		if err := getJSON(serve(t, n.C()).URL+"/v1/status", &fs); err != nil {
			t.Fatal(err)
		}
		if fs.Placement != nil && fs.RaftState != "leader" {
			t.Fatalf("follower %s shows a placement", n.Name)
		}
	}
}
