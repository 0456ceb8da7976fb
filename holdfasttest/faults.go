package holdfasttest

import "fmt"

// host returns node i's host on the in-memory network.
func (cl *Cluster) host(i int) string {
	if cl.Net == nil {
		cl.t.Fatalf("fault injection needs Options.InMemory")
	}
	return fmt.Sprintf("n%d", i)
}

// Pause stops all traffic to and from node i (in-memory network only), as
// SIGSTOP would look to the others.
func (cl *Cluster) Pause(i int) { cl.Net.Pause(cl.host(i)) }

// Resume undoes Pause.
func (cl *Cluster) Resume(i int) { cl.Net.Resume(cl.host(i)) }

// Isolate cuts node i off from every other node (in-memory network only).
func (cl *Cluster) Isolate(i int) { cl.Net.Isolate(cl.host(i)) }

// MuteGossip drops node i's gossip only (in-memory network only): its
// peers' failure detectors see it die while raft and RPC keep flowing.
func (cl *Cluster) MuteGossip(i int) { cl.Net.MuteGossip(cl.host(i)) }

// UnmuteGossip undoes MuteGossip.
func (cl *Cluster) UnmuteGossip(i int) { cl.Net.UnmuteGossip(cl.host(i)) }

// Partition splits the nodes into groups by index (in-memory network only).
func (cl *Cluster) Partition(groups ...[]int) {
	var hosts [][]string
	for _, g := range groups {
		var hs []string
		for _, i := range g {
			hs = append(hs, cl.host(i))
		}
		hosts = append(hosts, hs)
	}
	cl.Net.Partition(hosts...)
}

// Heal removes every fault (in-memory network only).
func (cl *Cluster) Heal() {
	if cl.Net != nil {
		cl.Net.Heal()
	}
}
