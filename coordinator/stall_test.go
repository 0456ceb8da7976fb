package coordinator_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestStalledLessorExpiresOnlyTheStopped: the leader's lessor is frozen
// (its loop and every keepalive reaching it block, as in a leader starved
// of CPU) for longer than its stall threshold (Session.TTL/10) while a
// non-voter's holder is stopped (its network paused). After the freeze the
// lessor has detected the stall (lease rule 3), the stopped holder's
// session is still expired, and it is the only expiry: every running
// node keeps the session it had.
func TestStalledLessorExpiresOnlyTheStopped(t *testing.T) {
	t.Parallel()
	regs := make([]*prometheus.Registry, 4)
	for i := range regs {
		regs[i] = prometheus.NewRegistry()
	}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 4, Voters: 3, InMemory: true, NoDataDir: []int{3},
		Configure: func(i int, c *coordinator.Config) { c.Registerer = regs[i] }})
	cl.WaitFormed(formTimeout)
	cl.WaitFor("every node in a session", formTimeout, func() error {
		for _, n := range cl.Running() {
			if n.C().SessionID() == "" {
				return holdfasttest.ErrNotYet
			}
		}
		return nil
	})
	sessions := map[int]string{}
	for _, n := range cl.Running() {
		sessions[n.Index] = n.C().SessionID()
	}
	leader := cl.WaitLeader(formTimeout)
	freeze := leader.Config.Session.TTL / 4 // 2.5 × the stall threshold
	var frozen atomic.Bool
	thaw := make(chan struct{})
	leader.C().PauseLessor(func() {
		if frozen.Load() {
			<-thaw
		}
	})
	cl.Pause(3) // the stopped holder
	frozen.Store(true)
	time.Sleep(freeze) // the fault's length, not a synchronisation
	frozen.Store(false)
	close(thaw)

	expiries := func() float64 {
		sum := 0.0
		for _, reg := range regs[:3] {
			sum += metricValue(t, reg, "holdfast_session_expiries_total", nil)
		}
		return sum
	}
	cl.WaitFor("the stopped holder's session to expire", formTimeout, func() error {
		if expiries() < 1 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	if n := leader.C().LessorStalls(); n < 1 {
		t.Errorf("the lessor frozen for %v detected no stall", freeze)
	}
	if n := expiries(); n != 1 {
		t.Errorf("%v session expiries, want 1 (the stopped holder's)", n)
	}
	for i := range 3 {
		if got := cl.Node(i).C().SessionID(); got != sessions[i] {
			t.Errorf("node%d: session %q, had %q before the stall", i, got, sessions[i])
		}
	}
}
