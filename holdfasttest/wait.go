package holdfasttest

import (
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// Leader returns the running node that is raft leader and that every other
// running node names as leader, or an error saying what is missing.
func (cl *Cluster) Leader() (*Node, error) {
	var leader *Node
	for _, n := range cl.Running() {
		if n.C().RaftState() == coordinator.StateLeader {
			if leader != nil {
				return nil, fmt.Errorf("%w: %s and %s both lead", ErrNotYet, leader.Name, n.Name)
			}
			leader = n
		}
	}
	if leader == nil {
		return nil, fmt.Errorf("%w: no leader", ErrNotYet)
	}
	return leader, nil
}

// WaitLeader waits until one running node leads and every running node
// agrees, and returns it.
func (cl *Cluster) WaitLeader(timeout time.Duration) *Node {
	cl.t.Helper()
	var leader *Node
	cl.WaitFor("a leader all nodes agree on", timeout, func() error {
		l, err := cl.Leader()
		if err != nil {
			return err
		}
		for _, n := range cl.Running() {
			info, ok := n.C().RaftLeader()
			if !ok || info.ID != l.C().ID() {
				return fmt.Errorf("%w: %s does not name %s as leader", ErrNotYet, n.Name, l.Name)
			}
		}
		leader = l
		return nil
	})
	return leader
}

// Formed reports nil once every running node has the same non-empty
// cluster ID and a replica that shows the cluster formed, sees every
// running node alive, and agrees on the leader.
func (cl *Cluster) Formed() error {
	running := cl.Running()
	if len(running) == 0 {
		return fmt.Errorf("%w: no node running", ErrNotYet)
	}
	id := running[0].C().ClusterID()
	if id == "" {
		return fmt.Errorf("%w: %s has no cluster ID", ErrNotYet, running[0].Name)
	}
	for _, n := range running {
		if got := n.C().ClusterID(); got != id {
			return fmt.Errorf("%w: %s has cluster %q, %s has %q", ErrNotYet, running[0].Name, id, n.Name, got)
		}
		if f := n.C().Formation(); !f.Formed {
			return fmt.Errorf("%w: %s: %s", ErrNotYet, n.Name, f.Progress)
		}
		alive := map[string]bool{}
		for _, m := range n.C().Members() {
			if m.State == coordinator.MemberAlive {
				alive[m.Name] = true
			}
		}
		for _, o := range running {
			if !alive[o.Name] {
				return fmt.Errorf("%w: %s does not see %s alive", ErrNotYet, n.Name, o.Name)
			}
		}
	}
	if _, err := cl.Leader(); err != nil {
		return err
	}
	return nil
}

// WaitFormed waits until Formed holds and returns the leader.
func (cl *Cluster) WaitFormed(timeout time.Duration) *Node {
	cl.t.Helper()
	cl.WaitFor("the cluster to form", timeout, cl.Formed)
	return cl.WaitLeader(timeout)
}

// Suffrages counts voters and non-voters in the leader's raft
// configuration.
func (cl *Cluster) Suffrages() (voters, nonVoters int, err error) {
	l, err := cl.Leader()
	if err != nil {
		return 0, 0, err
	}
	for _, m := range l.C().Members() {
		switch m.Suffrage {
		case coordinator.SuffrageVoter:
			voters++
		case coordinator.SuffrageNonVoter:
			nonVoters++
		}
	}
	return voters, nonVoters, nil
}

// CaughtUp reports nil once every running node's replica has applied at
// least the leader's applied index.
func (cl *Cluster) CaughtUp() error {
	l, err := cl.Leader()
	if err != nil {
		return err
	}
	want := l.C().AppliedIndex()
	for _, n := range cl.Running() {
		if got := n.C().AppliedIndex(); got < want {
			return fmt.Errorf("%w: %s applied %d, leader %d", ErrNotYet, n.Name, got, want)
		}
	}
	return nil
}
