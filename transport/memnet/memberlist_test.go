package memnet

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

func startMemberlist(t *testing.T, n *Network, host string) *memberlist.Memberlist {
	t.Helper()
	tr, err := n.Node(host).GossipTransport(host + ":7946")
	if err != nil {
		t.Fatal(err)
	}
	conf := memberlist.DefaultLocalConfig()
	conf.Name = host
	conf.Transport = tr
	conf.LogOutput = io.Discard
	conf.ProbeInterval = 200 * time.Millisecond
	conf.ProbeTimeout = 100 * time.Millisecond
	conf.SuspicionMaxTimeoutMult = 2
	conf.PushPullInterval = 500 * time.Millisecond
	conf.GossipInterval = 50 * time.Millisecond
	m, err := memberlist.Create(conf)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMemberlistJoinPauseResume(t *testing.T) {
	n := New(12)
	hosts := []string{"g1", "g2", "g3"}
	var ms []*memberlist.Memberlist
	defer func() {
		for _, m := range ms {
			_ = m.Shutdown()
		}
		n.Close()
	}()
	for _, h := range hosts {
		ms = append(ms, startMemberlist(t, n, h))
	}
	n.SetDelay("", "", 0, 2*time.Millisecond)
	seed, err := n.IPAddr("g1:7946")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[1:] {
		if _, err := m.Join([]string{seed}); err != nil {
			t.Fatal(err)
		}
	}
	all := func(k int, ms ...*memberlist.Memberlist) func() bool {
		return func() bool {
			for _, m := range ms {
				if m.NumMembers() != k {
					return false
				}
			}
			return true
		}
	}
	testkit.Eventually(t, "3 members everywhere", 20*time.Second, testkit.Holds(all(3, ms...)))

	n.Pause("g3")
	testkit.Eventually(t, "g1 and g2 to mark g3 dead", 30*time.Second, testkit.Holds(all(2, ms[0], ms[1])))

	n.Resume("g3")
	testkit.Eventually(t, "3 members after resume", 30*time.Second, testkit.Holds(all(3, ms...)))
}
