package feed

import (
	"cmp"
	"hash/fnv"
	"slices"
	"time"

	"github.com/holdfast-go/holdfast/membership"
)

// Peer is a node that may serve the feed.
type Peer struct {
	ID   string // raft server ID
	Addr string // RPC address
}

// Order returns servers in the order replica name tries them: by
// rendezvous hash of name and each server's ID, highest first, so each
// replica keeps its server while the set holds and the replicas spread
// evenly over the servers; the leader (leaderID) goes last, so followers
// carry the feed while another server is up.
func Order(name, leaderID string, servers []Peer) []Peer {
	type scored struct {
		p      Peer
		score  uint64
		leader bool
	}
	s := make([]scored, len(servers))
	for i, p := range servers {
		h := fnv.New64a()
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write([]byte(p.ID))
		s[i] = scored{p, mix(h.Sum64()), p.ID == leaderID}
	}
	slices.SortFunc(s, func(a, b scored) int {
		if a.leader != b.leader {
			if a.leader {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.p.ID, b.p.ID)
	})
	out := make([]Peer, len(s))
	for i := range s {
		out[i] = s[i].p
	}
	return out
}

// mix spreads FNV's output over all 64 bits (splitmix64's finaliser), so
// that names differing in their last byte score independently.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// PeersOf returns the members that may serve the feed to node self of
// cluster ours: the live voter-eligible members but self, of cluster
// ours (or of none known, on either side).
func PeersOf(members []membership.Member, self, ours string) []Peer {
	var out []Peer
	for _, m := range members {
		if m.State != membership.Alive || !m.Meta.Voter || m.Meta.NodeID == "" || m.Meta.NodeID == self ||
			(ours != "" && m.Meta.ClusterID != "" && m.Meta.ClusterID != ours) {
			continue
		}
		out = append(out, Peer{ID: m.Meta.NodeID, Addr: m.Meta.RPCAddr})
	}
	return out
}

// ContactTimeouts is how many heartbeat timeouts a follower may go without
// hearing from its leader and still serve the feed (Recent).
const ContactTimeouts = 4

// Recent reports whether a member of the raft group may serve the feed
// (ServerOptions.Serving): its raft log holds entries (lastIndex > 0) of
// a formed cluster, and it leads or heard from the leader within
// ContactTimeouts heartbeat timeouts, so what it has applied is recent;
// otherwise replicas move on. (A follower of a loaded machine misses a
// heartbeat now and then: one missed is no reason to send hundreds of
// replicas elsewhere.)
func Recent(lastIndex uint64, formed, leading bool, lastContact time.Time, heartbeat time.Duration) bool {
	if lastIndex == 0 || !formed {
		return false
	}
	return leading || time.Since(lastContact) < ContactTimeouts*heartbeat
}
