package feed

import (
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/membership"
)

func TestRecent(t *testing.T) {
	const hb = time.Second
	now := time.Now()
	for _, tc := range []struct {
		name      string
		lastIndex uint64
		formed    bool
		leading   bool
		contact   time.Time
		want      bool
	}{
		{"leader", 5, true, true, time.Time{}, true},
		{"follower in touch", 5, true, false, now, true},
		{"follower out of touch", 5, true, false, now.Add(-ContactTimeouts * hb), false},
		{"no log", 0, true, true, now, false},
		{"not formed", 5, false, true, now, false},
	} {
		if got := Recent(tc.lastIndex, tc.formed, tc.leading, tc.contact, hb); got != tc.want {
			t.Errorf("%s: Recent = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPeersOf(t *testing.T) {
	member := func(id, cluster string, voter bool, state membership.State) membership.Member {
		return membership.Member{State: state, Meta: membership.Meta{NodeID: id, ClusterID: cluster, Voter: voter, RPCAddr: "addr-" + id}}
	}
	got := PeersOf([]membership.Member{
		member("self", "c1", true, membership.Alive),
		member("a", "c1", true, membership.Alive),
		member("b", "", true, membership.Alive), // no cluster known yet: a candidate
		member("c", "c2", true, membership.Alive),
		member("d", "c1", false, membership.Alive),
		member("e", "c1", true, membership.Failed),
	}, "self", "c1")
	if len(got) != 2 || got[0] != (Peer{ID: "a", Addr: "addr-a"}) || got[1].ID != "b" {
		t.Errorf("PeersOf = %+v, want a and b", got)
	}
}
