package coordinator_test

import (
	"context"
	"errors"
	"testing"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/internal/raftnode"
)

// TestRecoverLostQuorum: three voters, two lost with their data dirs. The
// survivor's data dir is refused while it runs, then recovered offline to
// itself alone (the code holdfastctl data recover runs): started, it leads
// alone, the lease a lost node held passes to it with a larger token, and
// the lost nodes coming back as new identities are promoted until three
// voters serve again.
func TestRecoverLostQuorum(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 3*formTimeout)
	defer cancel()
	holder := voterIndex(t, cl, leader)
	l, err := cl.Node(holder).C().Acquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	before := l.Token()
	survivor := leader.Index
	if _, err := raftnode.OpenOffline(leader.DataDir); !errors.Is(err, raftnode.ErrDataDirLocked) {
		t.Fatalf("opening a running node's data dir: %v, want ErrDataDirLocked", err)
	}
	for i := range 3 {
		cl.Kill(i)
		if i != survivor {
			cl.Wipe(i)
		}
	}
	o, err := raftnode.OpenOffline(cl.Node(survivor).DataDir)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := o.State()
	if err != nil {
		o.Close()
		t.Fatal(err)
	}
	servers, err := raftnode.PlanRecovery(rs, o.ID, nil)
	if err == nil {
		err = o.Recover(servers, fsm.New())
	}
	o.Close()
	if err != nil {
		t.Fatalf("recovery: %v", err)
	}
	c := cl.Start(survivor)
	cl.WaitLeader(formTimeout)
	got, err := c.Acquire(ctx, "job") // the lost holder's session expires, the lease passes on
	if err != nil {
		t.Fatalf("Acquire on the recovered node: %v", err)
	}
	if got.Token() <= before {
		t.Errorf("token %d after the recovery, want more than %d (before)", got.Token(), before)
	}
	if v := c.Voters(); len(v) != 1 {
		t.Errorf("voters after the recovery: %v, want the survivor alone", v)
	}
	for i := range 3 {
		if i != survivor {
			cl.Start(i)
		}
	}
	waitSuffrages(t, cl, 3, 0)
	cl.WaitFor("one cluster of three", formTimeout, cl.Formed)
	for _, n := range cl.Running() {
		if id := n.C().ClusterID(); id != c.ClusterID() {
			t.Errorf("%s in cluster %s, want %s", n.Name, id, c.ClusterID())
		}
	}
	newcomer := cl.Node(holder).C()
	if err := newcomer.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if h, ok := newcomer.Holder("job"); !ok || h.Token != got.Token() {
		t.Errorf("a new node sees holder %+v (%v), want token %d", h, ok, got.Token())
	}
}
