package memnet

import (
	"net"
	"time"
)

// hostLocked names the host that a fault argument (a host, a fake IP, or a
// "host:port" address) refers to.
func (n *Network) hostLocked(s string) string {
	if h, _, err := net.SplitHostPort(s); err == nil {
		s = h
	}
	return n.canonLocked(s)
}

// Partition cuts every host of a group from every host of each other group,
// in both directions. Hosts not named in any group keep their connectivity.
// Cuts add to existing faults; Heal removes them. In every fault method a
// host may be given as its name, its fake IP, or any "host:port" on it.
func (n *Network) Partition(groups ...[]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, gi := range groups {
		for j, gj := range groups {
			if i == j {
				continue
			}
			for _, a := range gi {
				for _, b := range gj {
					n.blocked[link{n.hostLocked(a), n.hostLocked(b)}] = true
				}
			}
		}
	}
	n.notifyLocked()
}

// Isolate cuts host from every other host, including hosts that appear
// later, in both directions. Traffic of the host to itself still flows.
func (n *Network) Isolate(host string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.isolated[n.hostLocked(host)] = true
	n.notifyLocked()
}

// DropOneWay loses all traffic from host from to host to; traffic from to to
// from still flows.
func (n *Network) DropOneWay(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.blocked[link{n.hostLocked(from), n.hostLocked(to)}] = true
	n.notifyLocked()
}

// Pause freezes host as if its process were stopped: nothing it sends is
// delivered and nothing reaches it until Resume or Heal. Its goroutines keep
// running; they merely see every peer as unreachable.
func (n *Network) Pause(host string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.paused[n.hostLocked(host)] = true
	n.notifyLocked()
}

// Resume undoes Pause for host. Held stream data is then delivered.
func (n *Network) Resume(host string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.paused, n.hostLocked(host))
	n.notifyLocked()
}

// MuteGossip drops host's gossip only: every gossip packet it sends or
// should receive is lost and gossip streams to or from it are refused,
// while raft and RPC streams flow. To its peers the node looks dead to
// gossip but alive to raft. UnmuteGossip or Heal undoes it.
func (n *Network) MuteGossip(host string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.muted[n.hostLocked(host)] = true
	n.notifyLocked()
}

// UnmuteGossip undoes MuteGossip for host.
func (n *Network) UnmuteGossip(host string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.muted, n.hostLocked(host))
	n.notifyLocked()
}

// gossipCutLocked reports whether gossip between two hosts is muted.
func (n *Network) gossipCutLocked(from, to string) bool {
	return n.muted[from] || n.muted[to]
}

// Heal removes every partition, isolation, one-way drop, pause and gossip
// mute. Delay and loss settings stay. Stream data held by the removed faults
// is delivered.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.blocked)
	clear(n.isolated)
	clear(n.paused)
	clear(n.muted)
	n.notifyLocked()
}

// SetDelay sets the one-way delay of traffic from host from to host to to a
// uniform draw in [min, max]. "" for either host means any host; the most
// specific rule wins (from→to, then from→any, then any→to, then any→any).
// A zero min and max removes the rule. New delays apply to data sent after
// the call; queued stream data keeps its delivery time.
func (n *Network) SetDelay(from, to string, min, max time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := link{n.hostLocked(from), n.hostLocked(to)}
	if from == "" {
		l.from = ""
	}
	if to == "" {
		l.to = ""
	}
	if min <= 0 && max <= 0 {
		delete(n.delays, l)
	} else {
		n.delays[l] = delayRange{min, max}
	}
	n.notifyLocked()
}

// SetLoss sets the probability p (0 to 1) that a packet is lost. On streams a
// loss is not visible as missing data: each loss adds a retransmission delay
// of 200ms to the chunk (and, to keep order, to the chunks after it).
func (n *Network) SetLoss(p float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.loss = min(max(p, 0), 1)
	n.notifyLocked()
}
