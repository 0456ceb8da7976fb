package memnet

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// streamLayer adapts a memnet listener and node to raft.StreamLayer.
type streamLayer struct {
	net.Listener
	node *Node
}

func (s streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.node.DialContext(ctx, string(addr))
}

// countFSM counts applied entries.
type countFSM struct{ n atomic.Int64 }

func (f *countFSM) Apply(*raft.Log) any                 { return f.n.Add(1) }
func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, fmt.Errorf("no snapshots") }
func (f *countFSM) Restore(io.ReadCloser) error         { return nil }

type raftNode struct {
	host string
	r    *raft.Raft
	fsm  *countFSM
}

func startRaft(t *testing.T, n *Network, hosts []string) []*raftNode {
	t.Helper()
	var servers []raft.Server
	for _, h := range hosts {
		servers = append(servers, raft.Server{ID: raft.ServerID(h), Address: raft.ServerAddress(h + ":7000")})
	}
	var nodes []*raftNode
	for _, h := range hosts {
		l, err := n.Listen(h + ":7000")
		if err != nil {
			t.Fatal(err)
		}
		trans := raft.NewNetworkTransport(streamLayer{l, n.Node(h)}, 3, 2*time.Second, io.Discard)
		conf := raft.DefaultConfig()
		conf.LocalID = raft.ServerID(h)
		conf.HeartbeatTimeout = 300 * time.Millisecond
		conf.ElectionTimeout = 300 * time.Millisecond
		conf.LeaderLeaseTimeout = 150 * time.Millisecond
		conf.CommitTimeout = 10 * time.Millisecond
		conf.Logger = hclog.NewNullLogger()
		store := raft.NewInmemStore()
		snaps := raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(conf, store, store, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		fsm := &countFSM{}
		r, err := raft.NewRaft(conf, fsm, store, store, snaps, trans)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, &raftNode{host: h, r: r, fsm: fsm})
	}
	return nodes
}

// leaders returns the nodes among ns that believe they lead.
func leaders(ns []*raftNode) []*raftNode {
	var out []*raftNode
	for _, x := range ns {
		if x.r.State() == raft.Leader {
			out = append(out, x)
		}
	}
	return out
}

func TestRaftClusterSurvivesLeaderIsolation(t *testing.T) {
	n := New(11)
	nodes := startRaft(t, n, []string{"r1", "r2", "r3"})
	defer func() {
		for _, x := range nodes {
			_ = x.r.Shutdown().Error()
		}
		n.Close()
	}()
	n.SetDelay("", "", 0, 2*time.Millisecond)
	testkit.Eventually(t, "a leader", 20*time.Second, testkit.Holds(func() bool { return len(leaders(nodes)) == 1 }))
	old := leaders(nodes)[0]
	if err := old.r.Apply([]byte("x"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}

	n.Isolate(old.host)
	var rest []*raftNode
	for _, x := range nodes {
		if x != old {
			rest = append(rest, x)
		}
	}
	testkit.Eventually(t, "a leader on the majority side", 20*time.Second, testkit.Holds(func() bool { return len(leaders(rest)) == 1 }))
	testkit.Eventually(t, "the isolated leader to step down", 20*time.Second, testkit.Holds(func() bool { return old.r.State() != raft.Leader }))
	leader := leaders(rest)[0]
	if err := leader.r.Apply([]byte("y"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}

	n.Heal()
	testkit.Eventually(t, "one leader after heal", 20*time.Second, testkit.Holds(func() bool { return len(leaders(nodes)) == 1 }))
	leader = leaders(nodes)[0]
	if err := leader.r.Apply([]byte("z"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "all replicas to apply 3 entries", 20*time.Second, testkit.Holds(func() bool {
		for _, x := range nodes {
			if x.fsm.n.Load() != 3 {
				return false
			}
		}
		return true
	}))
}
