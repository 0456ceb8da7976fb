package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// prepMonitor is a shard monitor whose nodes prepare shards: it records
// every Prepare (node, shard, from, how its context ended) and, for every
// drain, the next owner the old owner saw.
type prepMonitor struct {
	*shardMonitor
	mu       sync.Mutex
	prepares []*prepRecord
	next     map[coordinator.ShardID][]string // per shard: the next owners seen in Release
	// gate, if it returns a channel for a node, holds that node's Prepare
	// calls until the channel is closed or their context ends.
	gate func(node string) <-chan struct{}
}

type prepRecord struct {
	node  string
	shard coordinator.ShardID
	from  coordinator.Holder
	done  chan struct{} // closed when the context ended
	cause error
}

func newPrepMonitor() *prepMonitor {
	return &prepMonitor{shardMonitor: newShardMonitor(), next: map[coordinator.ShardID][]string{}}
}

func (m *prepMonitor) configure(i int, c *coordinator.Config) {
	node := fmt.Sprintf("node%d", i)
	h := m.handler(node).(coordinator.HandlerFuncs)
	release := h.HandOffFunc
	h.HandOffFunc = func(ctx context.Context, l *coordinator.ShardLease) error {
		next := ""
		if o, ok := l.NextOwner(); ok {
			next = o.Node.Name
		}
		m.mu.Lock()
		m.next[l.Shard()] = append(m.next[l.Shard()], next)
		m.mu.Unlock()
		return release(ctx, l)
	}
	h.PrepareFunc = func(ctx context.Context, s coordinator.ShardID, from coordinator.Holder) error {
		r := &prepRecord{node: node, shard: s, from: from, done: make(chan struct{})}
		m.mu.Lock()
		m.prepares = append(m.prepares, r)
		gate := m.gate
		m.mu.Unlock()
		context.AfterFunc(ctx, func() {
			m.mu.Lock()
			r.cause = context.Cause(ctx)
			m.mu.Unlock()
			close(r.done)
		})
		if gate != nil {
			if ch := gate(node); ch != nil {
				select {
				case <-ch:
				case <-ctx.Done():
				}
			}
		}
		return nil
	}
	c.Shards.Handler = h
}

// preparedOn returns the prepares of shard s on node whose context ended
// because the lease started there.
func (m *prepMonitor) preparedOn(node string, s coordinator.ShardID) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.prepares {
		if r.node == node && r.shard == s && errors.Is(r.cause, context.Canceled) {
			n++
		}
	}
	return n
}

// leaseCounts returns how many leases the monitor saw per shard so far:
// grantsAfter counts the grants since by the order Acquire was called in,
// not by the leases' start (a belief starts at its session's last
// keepalive, which may be older than the step a test takes).
func (m *prepMonitor) leaseCounts() map[coordinator.ShardID]int {
	m.shardMonitor.mu.Lock()
	defer m.shardMonitor.mu.Unlock()
	out := map[coordinator.ShardID]int{}
	for s, ls := range m.leases {
		out[s] = len(ls)
	}
	return out
}

// grantsAfter returns, per shard, the leases seen since the counts
// before, and who got them.
func (m *prepMonitor) grantsAfter(before map[coordinator.ShardID]int) (map[coordinator.ShardID]int, map[coordinator.ShardID][]string) {
	m.shardMonitor.mu.Lock()
	defer m.shardMonitor.mu.Unlock()
	n, who := map[coordinator.ShardID]int{}, map[coordinator.ShardID][]string{}
	for s, ls := range m.leases {
		for _, ml := range ls[before[s]:] {
			n[s]++
			who[s] = append(who[s], fmt.Sprintf("%s token %d", ml.node, ml.l.Token()))
		}
	}
	return n, who
}

// mark returns how many Prepare calls were made so far: the calls since
// are those of the step a test takes next.
func (m *prepMonitor) mark() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.prepares)
}

// startedSince returns how many Prepare calls node (any node: "") received
// after mark.
func (m *prepMonitor) startedSince(node string, mark int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.prepares[mark:] {
		if node == "" || r.node == node {
			n++
		}
	}
	return n
}

// shardsSince returns the shards node was asked to prepare after mark.
func (m *prepMonitor) shardsSince(node string, mark int) []coordinator.ShardID {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []coordinator.ShardID
	for _, r := range m.prepares[mark:] {
		if r.node == node {
			out = append(out, r.shard)
		}
	}
	return out
}

// waitStarted waits until node ("": any) received a Prepare call after
// mark.
func (m *prepMonitor) waitStarted(cl *holdfasttest.Cluster, node string, mark int) {
	cl.WaitFor("a prepare under way", formTimeout, func() error {
		if m.startedSince(node, mark) == 0 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
}

// shardsOf returns the shards the replica of c shows owned by node.
func shardsOf(c *coordinator.Coordinator, node string) []coordinator.ShardID {
	var out []coordinator.ShardID
	for s := 0; s < c.Shards(); s++ {
		if o, ok := c.Owner(coordinator.ShardID(s)); ok && o.Node.Name == node {
			out = append(out, coordinator.ShardID(s))
		}
	}
	return out
}

// checkPreparedMoves checks that every shard of moved, drained from node
// from, went to a node that prepared it, and that the old owner's drain
// named that node as the next owner. sessions (node name to session ID)
// are the nodes that were to keep their sessions through the moves: if c's
// replica no longer holds one of them, the machine stalled past the TTL,
// the shards moved as free ones too, and what went wrong is only logged.
func (m *prepMonitor) checkPreparedMoves(t *testing.T, cl *holdfasttest.Cluster, c *coordinator.Coordinator, moved []coordinator.ShardID, sessions map[string]string) {
	t.Helper()
	waitOwned(t, cl, c, moved)
	// A prepare's context ends as the lease starts; the monitor hears of
	// it in a goroutine of its own (context.AfterFunc).
	cl.WaitFor("the prepares of the moved shards ended by their grants", formTimeout, func() error {
		if len(sessionsGone(c, sessions)) > 0 {
			return nil // the moves were not all planned ones: judged below
		}
		for _, s := range moved {
			if o, ok := c.Owner(s); ok && m.preparedOn(o.Node.Name, s) == 0 {
				return fmt.Errorf("%w: shard %d went to %s, which has not (yet) prepared it", holdfasttest.ErrNotYet, s, o.Node)
			}
		}
		return nil
	})
	var wrong []string
	for _, s := range moved {
		o, ok := c.Owner(s)
		if !ok {
			wrong = append(wrong, fmt.Sprintf("shard %d unowned after the move", s))
			continue
		}
		m.mu.Lock()
		next := m.next[s]
		m.mu.Unlock()
		if len(next) == 0 || next[len(next)-1] != o.Node.Name {
			wrong = append(wrong, fmt.Sprintf("shard %d: the drain saw next owners %q, the shard went to %s", s, next, o.Node))
		}
	}
	if len(wrong) == 0 {
		return
	}
	if gone := sessionsGone(c, sessions); len(gone) > 0 {
		t.Logf("the sessions of %v ended (the machine stalled past their TTL), so these are not failures: %v", gone, wrong)
		return
	}
	for _, w := range wrong {
		t.Error(w)
	}
}

// waitOwned waits until c's replica shows every shard of ss owned (Drain
// returns once the drained node owns none: the grants follow).
func waitOwned(t *testing.T, cl *holdfasttest.Cluster, c *coordinator.Coordinator, ss []coordinator.ShardID) {
	t.Helper()
	cl.WaitFor("the moved shards owned", formTimeout, func() error {
		for _, s := range ss {
			if info, ok := c.Table().Shard(s); !ok || info.State != coordinator.ShardOwned {
				return fmt.Errorf("%w: shard %d %+v", holdfasttest.ErrNotYet, s, info)
			}
		}
		return nil
	})
}

func prepCluster(t *testing.T, nodes, shards int, m *prepMonitor, prepTimeout time.Duration) *holdfasttest.Cluster {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: nodes, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = shards
		c.Shards.PrepareTimeout = prepTimeout
		m.configure(i, c)
	}})
	cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, shards, formTimeout)
	return cl
}

// otherNode returns a running node that is not n (and not the leader when
// notLeader).
func otherNode(cl *holdfasttest.Cluster, not ...*holdfasttest.Node) *holdfasttest.Node {
	for _, n := range cl.Running() {
		skip := false
		for _, x := range not {
			skip = skip || n == x
		}
		if !skip {
			return n
		}
	}
	return nil
}

// abandonedSince returns how many Prepare calls after mark ended as
// abandoned, and whether every one of them ended.
func (m *prepMonitor) abandonedSince(mark int) (n int, all bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all = true
	for _, r := range m.prepares[mark:] {
		select {
		case <-r.done:
			if errors.Is(r.cause, coordinator.ErrMoveAbandoned) {
				n++
			}
		default:
			all = false
		}
	}
	return n, all
}

// waitGranted waits until the monitor has seen each of shards granted
// since before.
func (m *prepMonitor) waitGranted(cl *holdfasttest.Cluster, before map[coordinator.ShardID]int, shards []coordinator.ShardID) {
	cl.WaitFor("the monitor saw every grant", formTimeout, func() error {
		got, _ := m.grantsAfter(before)
		for _, s := range shards {
			if got[s] == 0 {
				return fmt.Errorf("%w: shard %d not seen granted yet", holdfasttest.ErrNotYet, s)
			}
		}
		return nil
	})
}
