package cluster

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/membership"
)

// Formation describes how far this node is in forming or joining a
// cluster, as Coordinator.Formation reports it (the facade aliases it).
type Formation struct {
	// Formed is true once this node is a member of a formed cluster (it
	// knows the cluster's ID).
	Formed bool
	// Expect is Config.Cluster.BootstrapExpect: how many voter-eligible nodes must
	// see each other before a new cluster is bootstrapped (0: this node
	// only joins an existing cluster).
	Expect int
	// Seen lists, sorted, the names of the voter-eligible members that
	// gossip shows alive and in no cluster yet, this node included when it
	// is eligible: the candidates for a bootstrap.
	Seen []string
	// Progress says in one line where formation stands, for instance
	// "bootstrap: 2 of 3 eligible nodes seen (n1, n2)".
	Progress string
}

// Formation reports how far this node is in forming or joining a
// cluster. It reads gossip and the local replica only.
func (cl *Cluster) Formation() Formation {
	f := Formation{Expect: cl.o.BootstrapExpect, Seen: []string{}}
	for _, m := range cl.freshEligible() {
		f.Seen = append(f.Seen, m.Name)
	}
	id, recorded := cl.o.View().Cluster().ID, cl.ClusterID()
	leader := cl.o.Raft.Leader() != ""
	switch {
	case id != "" && leader:
		f.Formed, f.Progress = true, "member of cluster "+id
	case id != "":
		f.Formed, f.Progress = true, "member of cluster "+id+"; no raft leader known"
	case recorded != "":
		f.Progress = "member of cluster " + recorded + " (as its data dir records); waiting for the replica to replay the log"
	case cl.hasRaftState():
		f.Progress = "has raft state; waiting for a leader to replay the log"
	default:
		f.Progress = cl.joinProgress(f)
	}
	return f
}

// joinProgress describes a node without raft state: bootstrapping, or
// waiting to be added to a cluster it sees, or to see one.
func (cl *Cluster) joinProgress(f Formation) string {
	members := cl.members.Members()
	for _, m := range members {
		if (m.State == membership.Alive || m.State == membership.Suspect) && m.Meta.ClusterID != "" {
			return fmt.Sprintf("joining cluster %s (seen via %s): waiting for its leader to add this node", m.Meta.ClusterID, m.Name)
		}
	}
	if f.Expect > 0 {
		return fmt.Sprintf("bootstrap: %d of %d eligible nodes seen (%s)", len(f.Seen), f.Expect, strings.Join(f.Seen, ", "))
	}
	return fmt.Sprintf("waiting to join a cluster: no member of one seen among %d gossip members (Cluster.BootstrapExpect is 0: this node never bootstraps)", len(members))
}

// freshEligible returns the members, sorted by name, that could take part
// in a bootstrap: alive (or suspect), voter-eligible, in no cluster yet,
// and announcing their identity and RPC address.
func (cl *Cluster) freshEligible() []membership.Member {
	var fresh []membership.Member
	for _, m := range cl.members.Members() {
		if (m.State == membership.Alive || m.State == membership.Suspect) && m.Meta.Voter &&
			m.Meta.ClusterID == "" && m.Meta.NodeID != "" && m.Meta.RPCAddr != "" {
			fresh = append(fresh, m)
		}
	}
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].Name < fresh[j].Name })
	return fresh
}

// formationLoop logs formation progress until this node is a member of a
// formed cluster: at once when it changes, and every
// Options.FormationLogInterval otherwise.
func (cl *Cluster) formationLoop() {
	var last string
	var logged time.Time
	tick := time.NewTicker(min(cl.o.HeartbeatTimeout, time.Second))
	defer tick.Stop()
	for {
		f := cl.Formation()
		if f.Formed {
			return
		}
		if f.Progress != last || time.Since(logged) >= cl.o.FormationLogInterval {
			cl.log.Info(f.Progress, "expect", f.Expect, "seen", len(f.Seen))
			last, logged = f.Progress, time.Now()
		}
		select {
		case <-cl.ctx.Done():
			return
		case <-tick.C:
		}
	}
}
