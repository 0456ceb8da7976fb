package coordinator_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestLateSessionCreateTakesNoShards: a node whose requests reach the
// leader later than RPCTimeout (the leader counts a forwarded command's
// budget from its arrival: it commits the create after the caller gave up)
// must not leave behind a session that owns shards. The node is a
// non-voter (its slow raft answers matter to nobody); its keepalives fail,
// its belief lapses, and each create it then sends commits after the
// caller timed out. No
// session of the node that the node never believed in may own a shard, and
// such sessions must be gone soon after the answers are on time again.
func TestLateSessionCreateTakesNoShards(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 4, InMemory: true, NoDataDir: []int{3},
		Configure: func(_ int, c *coordinator.Config) { c.Shards.Count = 48 }})
	leader := cl.WaitFormed(formTimeout)
	n := cl.Node(3)
	cl.WaitFor("node3 has a session", formTimeout, func() error {
		if n.C().SessionID() == "" {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	id := n.C().ID()
	rpc := n.C().Config().RPCTimeout
	ttl := n.C().Config().Session.TTL

	// Sample, every few milliseconds, which sessions node3 believed in and
	// which sessions of node3 own shards on the leader.
	var mu sync.Mutex
	believed := map[string]bool{}
	owners := map[string]int{} // session → most shards seen owned at once
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			sample(leader.C(), n.C(), id, &mu, believed, owners)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-sampled
	}()

	first := n.C().SessionID()
	late := rpc + rpc/4
	// Delay node3's calls to every voter, not only to the leader of the
	// moment: a leader change on a loaded host would otherwise take its
	// creates at once and none would ever be late.
	setDelay := func(d time.Duration) {
		for _, v := range cl.Running() {
			if v != n {
				cl.Net.SetDelay(n.C().RPCAddr(), v.C().RPCAddr(), d, d)
			}
		}
	}
	setDelay(late)
	heal := func() { setDelay(0) }
	// Wait until at least one create sent while the answers were late
	// committed: a session of node3 the node never believed in.
	cl.WaitFor("a create committed after its caller gave up", formTimeout, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range leader.C().SessionsOfNode(id) {
			if s != first && !believed[s] {
				return nil
			}
		}
		return holdfasttest.ErrNotYet
	})
	heal()
	cl.WaitFor("node3 back in a session", formTimeout, func() error {
		if s := n.C().SessionID(); s == "" || s == first {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	// Any session nobody keeps alive is expired one TTL after it appeared
	// at the latest; watch for TTL + JoinStabilization + grace beyond that
	// (a late session gets shards, if at all, JoinStabilization after it
	// appears) and until the leader shows only the node's own session.
	deadline := time.Now().Add(2*ttl + n.C().Config().Shards.JoinStabilization + n.C().Config().Session.ExpiryGrace)
	cl.WaitFor("only node3's own session left", formTimeout, func() error {
		cur := n.C().SessionID()
		if sessions := leader.C().SessionsOfNode(id); time.Now().Before(deadline) || len(sessions) != 1 || sessions[0] != cur {
			return fmt.Errorf("%w: sessions of node3 %v, its own %s", holdfasttest.ErrNotYet, sessions, cur)
		}
		return nil
	})
	close(stop)
	<-sampled
	mu.Lock()
	defer mu.Unlock()
	var orphans []string
	for s, shards := range owners {
		if !believed[s] {
			orphans = append(orphans, fmt.Sprintf("%s (%d shards)", s, shards))
		}
	}
	slices.Sort(orphans)
	if len(orphans) > 0 {
		t.Fatalf("sessions of node3 the node never believed in owned shards: %v", orphans)
	}
	t.Logf("sessions of node3 that owned shards: %d, all believed by the node", len(owners))
	// Its graceful shutdown hands its shards off without waiting on any
	// session it does not keep alive.
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := cl.Stop(ctx, n.Index); err != nil {
		t.Fatalf("graceful shutdown of node3: %v", err)
	}
}

// sample records n's current session in believed and, for every session of
// the node with raft ID id that owns shards on leader, the most shards it
// was seen owning.
func sample(leader, n *coordinator.Coordinator, id string, mu *sync.Mutex, believed map[string]bool, owners map[string]int) {
	mu.Lock()
	defer mu.Unlock()
	if s := n.SessionID(); s != "" {
		believed[s] = true
	}
	t := leader.Table()
	count := map[string]int{}
	for s := 0; s < t.Len(); s++ {
		if h, ok := t.Owner(coordinator.ShardID(s)); ok && h.Node.ID == id {
			count[h.Session]++
		}
	}
	for s, c := range count {
		owners[s] = max(owners[s], c)
	}
}
