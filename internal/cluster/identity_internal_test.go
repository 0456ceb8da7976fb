package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
)

// TestAcceptForeignCluster: a node that recorded its cluster refuses the
// gossip of members of another one with a *ForeignClusterError, from its
// first message on; members of its own cluster, or of none, are accepted,
// and a node of no cluster accepts everyone.
func TestAcceptForeignCluster(t *testing.T) {
	n := newTestNode(t, "a", newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0)), nil)
	if err := n.Accept(member("b", membership.Alive, true, "B")); err != nil {
		t.Fatalf("no cluster yet: %v", err)
	}
	if err := n.o.Record.Set("A", 0); err != nil {
		t.Fatal(err)
	}
	if n.LocalMeta().ClusterID != "A" {
		t.Fatalf("gossips %+v", n.LocalMeta())
	}
	err := n.Accept(member("b", membership.Alive, true, "B"))
	var fe *ForeignClusterError
	if !errors.Is(err, wire.ErrForeignCluster) || !errors.As(err, &fe) || fe.Ours != "A" || fe.Theirs != "B" || fe.Member != "b" {
		t.Fatalf("a member of B: %v", err)
	}
	for _, c := range []string{"A", ""} {
		if err := n.Accept(member("c", membership.Alive, true, c)); err != nil {
			t.Fatalf("a member of %q: %v", c, err)
		}
	}
}

// TestJoinForeignClusterFails: a first join that the seeds' cluster
// refuses fails Join (so New fails) instead of being retried.
func TestJoinForeignClusterFails(t *testing.T) {
	n := newTestNode(t, "a", newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0)), func(o *Options) { o.Join = []string{"seed:1"} })
	m := &fakeMembers{events: make(chan membership.Event),
		joinErr: fmt.Errorf("membership: join seed:1: %w", &ForeignClusterError{Ours: "B", Theirs: "A", Member: "s"})}
	if err := n.Join(context.Background(), m); !errors.Is(err, wire.ErrForeignCluster) {
		t.Fatalf("Join: %v", err)
	}
}

// TestClusterIDLoopRecords: once the replica shows the cluster, the part
// records it with its incarnation and gossips it.
func TestClusterIDLoopRecords(t *testing.T) {
	f := fsm.New()
	n := newTestNode(t, "a", newFakeNet(), testkit.NewClock(time.Unix(1_000_000, 0)), func(o *Options) {
		o.View, o.Config.BootstrapExpect = f.View, 0
	})
	n.Start()
	b, err := fsm.Encode(fsm.Command{Op: fsm.OpInitCluster, Init: &fsm.InitCluster{ClusterID: "C", Shards: 4, Voters: 1, Created: 42}})
	if err != nil {
		t.Fatal(err)
	}
	f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: b})
	deadline := time.Now().Add(10 * time.Second)
	for n.members.lastMeta().ClusterID != "C" {
		if time.Now().After(deadline) {
			t.Fatalf("recorded %q, gossips %+v", n.ClusterID(), n.members.lastMeta())
		}
		time.Sleep(time.Millisecond)
	}
	rec := n.o.Record.(*memRecord)
	if rec.ID() != "C" {
		t.Fatalf("recorded %q", rec.ID())
	}
}
