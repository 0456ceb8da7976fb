package feed

import (
	"fmt"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/transport/memnet"
)

// TestReplicaFollowsOverTCP: a replica fed over loopback TCP reaches the
// servers' state, command by command, and never goes backwards.
func TestReplicaFollowsOverTCP(t *testing.T) {
	g := newGroup(t)
	a, b := g.addServer("a", nil, "", 0), g.addServer("b", nil, "", 0)
	g.commit(initCmd(t), a, b)
	r := startReplica(t, "r1", nil, "", g.peers)
	for i := range 50 {
		g.commit(sessionCmd(t, i), a, b)
	}
	waitSame(t, r, a)
	for i := 50; i < 60; i++ {
		g.commit(sessionCmd(t, i), a, b)
	}
	waitSame(t, r, a)
}

// TestReplicaNeverAheadOfServer: entries in a server's log that it has not
// applied (not known committed) are never sent.
func TestReplicaNeverAheadOfServer(t *testing.T) {
	g := newGroup(t)
	a := g.addServer("a", nil, "", 0)
	g.commit(initCmd(t), a)
	applied := g.commit(sessionCmd(t, 0), a)
	for i := 1; i < 10; i++ {
		g.commit(sessionCmd(t, i)) // logged, not applied
	}
	r := startReplica(t, "r1", nil, "", g.peers)
	waitSame(t, r, a)
	// A pull is held while the server has nothing new: the replica stays.
	rep, err := a.srv.Serve(t.Context(), PullRequest{From: applied})
	if err != nil || len(rep.Entries) != 0 || rep.Snap != nil {
		t.Fatalf("pull past the applied index: %+v, %v", rep, err)
	}
	if got := r.fsm.View().Index(); got != applied {
		t.Fatalf("replica at %d, above the server's applied %d", got, applied)
	}
	g.catchUp(a)
	waitSame(t, r, a)
}

// TestReplicaMovesWhenServerDies: the replica's server is cut; it moves to
// the other and follows it; the first comes back and serves again.
func TestReplicaMovesWhenServerDies(t *testing.T) {
	g := newGroup(t)
	a, b := g.addServer("a", nil, "", 0), g.addServer("b", nil, "", 0)
	g.commit(initCmd(t), a, b)
	r := startReplica(t, "r1", nil, "", g.peers)
	waitSame(t, r, a)
	first := waitServer(t, r)
	dead, other := a, b
	if first == "b" {
		dead, other = b, a
	}
	if err := dead.tr.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		g.commit(sessionCmd(t, i), a, b)
	}
	waitSame(t, r, other)
	if got := r.client.Server(); got != other.id {
		t.Fatalf("replica pulls from %s, want %s", got, other.id)
	}
	g.restart(dead)
	g.commit(sessionCmd(t, 99), a, b)
	waitSame(t, r, dead)
}

// TestReplicaCatchesUpBySnapshot: when the server's log no longer holds
// what follows the replica's index, the replica restores the server's
// snapshot, read in small chunks, and follows the log after it.
func TestReplicaCatchesUpBySnapshot(t *testing.T) {
	g := newGroup(t)
	a := g.addServer("a", nil, "", 64)
	g.commit(initCmd(t), a)
	a.serving = false
	r := startReplica(t, "r1", nil, "", g.peers)
	for i := range 40 {
		g.commit(sessionCmd(t, i), a)
	}
	last, _ := a.logs.LastIndex()
	if err := a.logs.DeleteRange(1, last-5); err != nil { // compacted into a snapshot
		t.Fatal(err)
	}
	g.mu.Lock()
	a.serving = true
	g.mu.Unlock()
	waitSame(t, r, a)
	// counted just after the restore shows
	testkit.Eventually(t, "a snapshot restored", 10*time.Second, testkit.Holds(func() bool { return r.client.Snapshots() > 0 }))
	if r.client.Snapshots() != 1 {
		t.Fatalf("snapshots restored: %d, want 1", r.client.Snapshots())
	}
	g.commit(sessionCmd(t, 100), a)
	waitSame(t, r, a)
}

// TestReplicaOnMemnetWithFaults: on the in-memory network, the replica's
// server is isolated while commands commit (it moves to another), then
// every server is isolated (the replica keeps its state and never goes
// back), and once the network heals it catches up.
func TestReplicaOnMemnetWithFaults(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	n := memnet.New(seed)
	defer n.Close()
	g := newGroup(t)
	a := g.addServer("a", n.Node("10.0.0.1"), "10.0.0.1:7000", 0)
	b := g.addServer("b", n.Node("10.0.0.2"), "10.0.0.2:7000", 0)
	g.commit(initCmd(t), a, b)
	r := startReplica(t, "r1", n.Node("10.0.0.9"), "10.0.0.9:7000", g.peers)
	waitSame(t, r, a)
	host := map[string]string{"a": "10.0.0.1", "b": "10.0.0.2"}
	first := waitServer(t, r)
	n.Isolate(host[first])
	for i := range 10 {
		g.commit(sessionCmd(t, i), a, b)
	}
	other := a
	if first == "a" {
		other = b
	}
	waitSame(t, r, other)
	n.Isolate(host[other.id])
	for i := 10; i < 20; i++ {
		g.commit(sessionCmd(t, i), a, b)
	}
	n.Heal()
	waitSame(t, r, a)
}

// waitServer waits until the replica has pulled from a server and returns it.
func waitServer(t *testing.T, r *replica) string {
	t.Helper()
	testkit.Eventually(t, "the replica's first pull", 10*time.Second, testkit.Holds(func() bool { return r.client.Server() != "" }))
	return r.client.Server()
}

// TestOrderSpreadsOverFollowers: 300 replicas over 3 servers, one leading:
// the followers each carry about half, the leader none, and a replica's
// first choice does not change when an unrelated server joins.
func TestOrderSpreadsOverFollowers(t *testing.T) {
	servers := []Peer{{ID: "v1"}, {ID: "v2"}, {ID: "v3"}}
	count := map[string]int{}
	for i := range 300 {
		count[Order(fmt.Sprintf("node%d", i), "v2", servers)[0].ID]++
	}
	if count["v2"] != 0 || count["v1"] < 110 || count["v3"] < 110 {
		t.Fatalf("first choices %v: want the leader v2 at 0 and the followers near 150 each", count)
	}
	moved := 0
	more := append(servers[:3:3], Peer{ID: "v4"})
	for i := range 300 {
		name := fmt.Sprintf("node%d", i)
		was, now := Order(name, "", servers)[0].ID, Order(name, "", more)[0].ID
		if was != now && now != "v4" {
			moved++
		}
	}
	if moved != 0 {
		t.Fatalf("%d replicas moved between old servers when v4 joined", moved)
	}
}

// TestFarBehindGetsSnapshot: a replica that starts more than MaxLag behind
// is sent a snapshot rather than every command since; one with a state is
// sent the commands, within MaxLag or not, while the log holds them.
func TestFarBehindGetsSnapshot(t *testing.T) {
	g := newGroup(t)
	a := g.addServer("a", nil, "", 0)
	a.srv.o.MaxLag = 10
	g.commit(initCmd(t), a)
	for i := range 40 {
		g.commit(sessionCmd(t, i), a)
	}
	rep, err := a.srv.Serve(t.Context(), PullRequest{From: 0})
	if err != nil || rep.Snap == nil || rep.Snap.Index != a.replica.View().Index() {
		t.Fatalf("pull from 0, 41 behind: %+v, %v; want a snapshot at %d", rep, err, a.replica.View().Index())
	}
	rep, err = a.srv.Serve(t.Context(), PullRequest{From: 35})
	if err != nil || rep.Snap != nil || len(rep.Entries) != 6 {
		t.Fatalf("pull from 35: %d entries, snapshot %v, %v; want the 6 commands", len(rep.Entries), rep.Snap != nil, err)
	}
	rep, err = a.srv.Serve(t.Context(), PullRequest{From: 5})
	if err != nil || rep.Snap != nil || len(rep.Entries) != 36 {
		t.Fatalf("pull from 5, 36 behind: %d entries, snapshot %v, %v; want the 36 commands", len(rep.Entries), rep.Snap != nil, err)
	}
}
