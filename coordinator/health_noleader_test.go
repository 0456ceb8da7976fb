package coordinator_test

import (
	"testing"

	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestGroupHealthWithoutLeader kills two of three voters: the survivor's
// group verdict turns unknown ("no raft leader known") as soon as it knows
// no leader, rather than showing the last "3 of 3 voters healthy, fault
// tolerance 1" until the judgement ages out.
func TestGroupHealthWithoutLeader(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	cl.WaitFor("node0 to hold a healthy verdict", formTimeout, func() error {
		if g := c.Health(); !g.Known || g.Degraded() || g.FailureTolerance != 1 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	cl.Kill(1)
	cl.Kill(2)
	cl.WaitFor("node0 to know no leader", formTimeout, func() error {
		if _, ok := c.NoLeaderSince(); !ok {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	g := c.Health()
	if g.Known || g.Unknown != "no raft leader known" || !g.Degraded() {
		t.Fatalf("with no leader known, Health is %+v; want unknown at once (no raft leader known)", g)
	}
}
