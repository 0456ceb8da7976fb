package coordinator_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// shardMonitor records every shard lease of every node through the
// handler, so that a test can check afterwards that no two nodes believed
// they owned the same shard at once (I1) and that tokens increased per
// shard (I2).
type shardMonitor struct {
	mu      sync.Mutex
	leases  map[coordinator.ShardID][]monLease
	drain   time.Duration // Release sleeps this long (a drain)
	release func(node string, l *coordinator.ShardLease)
}

type monLease struct {
	node string
	l    *coordinator.ShardLease
}

func newShardMonitor() *shardMonitor {
	return &shardMonitor{leases: map[coordinator.ShardID][]monLease{}}
}

// handler returns the handler for one node.
func (m *shardMonitor) handler(node string) coordinator.ShardHandler {
	return coordinator.HandlerFuncs{
		ServeFunc: func(ctx context.Context, l *coordinator.ShardLease) {
			m.mu.Lock()
			m.leases[l.Shard()] = append(m.leases[l.Shard()], monLease{node: node, l: l})
			m.mu.Unlock()
		},
		HandOffFunc: func(ctx context.Context, l *coordinator.ShardLease) error {
			if m.release != nil {
				m.release(node, l)
			}
			if m.drain > 0 {
				t := time.NewTimer(m.drain)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
				}
			}
			return nil
		},
	}
}

// configure installs the monitor's handler on every node of a cluster.
func (m *shardMonitor) configure(i int, c *coordinator.Config) {
	c.Shards.Handler = m.handler(fmt.Sprintf("node%d", i))
}

// grants returns how many leases were seen (per shard: one per grant a node
// believed).
func (m *shardMonitor) grants() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, ls := range m.leases {
		n += len(ls)
	}
	return n
}

// grantsSince counts leases whose belief began after t.
func (m *shardMonitor) grantsSince(t time.Time) (total int, perShard map[coordinator.ShardID]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	perShard = map[coordinator.ShardID]int{}
	for s, ls := range m.leases {
		for _, ml := range ls {
			if coordinator.ShardLeaseStart(ml.l).After(t) {
				total++
				perShard[s]++
			}
		}
	}
	return total, perShard
}

// historySince describes the grants of shard s whose belief began after
// t, in order: node, token and start, for a failure message.
func (m *shardMonitor) historySince(s coordinator.ShardID, t time.Time) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ls := append([]monLease(nil), m.leases[s]...)
	sort.Slice(ls, func(i, j int) bool {
		return coordinator.ShardLeaseStart(ls[i].l).Before(coordinator.ShardLeaseStart(ls[j].l))
	})
	var out []string
	for _, ml := range ls {
		if start := coordinator.ShardLeaseStart(ml.l); start.After(t) {
			out = append(out, fmt.Sprintf("%s token %d at +%v", ml.node, ml.l.Token(), start.Sub(t).Round(time.Millisecond)))
		}
	}
	return strings.Join(out, ", ")
}

// check verifies I1 and I2 over everything recorded: per shard, belief
// windows of different grants never overlap and tokens strictly increase
// in the order beliefs began. It returns the longest gap between one
// owner's end and the next owner's start (a measure of unowned time as
// owners saw it).
func (m *shardMonitor) check(t *testing.T) (maxGap time.Duration) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for s, ls := range m.leases {
		sorted := append([]monLease(nil), ls...)
		sort.Slice(sorted, func(i, j int) bool {
			return coordinator.ShardLeaseStart(sorted[i].l).Before(coordinator.ShardLeaseStart(sorted[j].l))
		})
		for i := 1; i < len(sorted); i++ {
			prev, cur := sorted[i-1], sorted[i]
			if cur.l.Token() <= prev.l.Token() {
				t.Errorf("I2: shard %d token %d (%s) after %d (%s)", s, cur.l.Token(), cur.node, prev.l.Token(), prev.node)
			}
			if prev.l.Err() == nil {
				t.Errorf("I1: shard %d: %s still believes token %d while %s began token %d",
					s, prev.node, prev.l.Token(), cur.node, cur.l.Token())
				continue
			}
			end, start := coordinator.ShardLeaseEnd(prev.l), coordinator.ShardLeaseStart(cur.l)
			if !end.Before(start) {
				t.Errorf("I1: shard %d: %s believed token %d until %v, %s began token %d %v earlier",
					s, prev.node, prev.l.Token(), end.Format("15:04:05.000"), cur.node, cur.l.Token(), end.Sub(start))
			}
			if gap := start.Sub(end); gap > maxGap && prev.node != cur.node {
				maxGap = gap
			}
		}
	}
	return maxGap
}

// waitBalanced waits until every shard is owned (not revoking) by one of
// the running nodes, each node's local leases match the table, and every
// node owns within the balance bound for n owners.
func waitBalanced(t *testing.T, cl *holdfasttest.Cluster, shards int, timeout time.Duration) map[string]int {
	t.Helper()
	var counts map[string]int
	cl.WaitFor("shards balanced", timeout, func() error {
		var err error
		counts, err = balanced(cl, shards)
		return err
	})
	return counts
}

func balanced(cl *holdfasttest.Cluster, shards int) (map[string]int, error) {
	nodes := cl.Running()
	counts := map[string]int{}
	local := map[string]int{}
	for _, n := range nodes {
		local[n.Name] = len(n.C().Owned())
	}
	ref := nodes[0].C()
	for s := 0; s < shards; s++ {
		sh, ok := ref.Table().Shard(coordinator.ShardID(s))
		o := sh.Owner
		if !ok || sh.State != coordinator.ShardOwned {
			return nil, fmt.Errorf("%w: shard %d: %+v %v", holdfasttest.ErrNotYet, s, o, ok)
		}
		counts[o.Node.Name]++
	}
	hi := int(math.Ceil(float64(shards) / float64(len(nodes)) * 1.05))
	lo := int(math.Floor(float64(shards) / float64(len(nodes)) * 0.95))
	for _, n := range nodes {
		if c := counts[n.Name]; c > hi || c < lo || local[n.Name] != c {
			return nil, fmt.Errorf("%w: %s owns %d (local %d), want %d..%d; all %v", holdfasttest.ErrNotYet,
				n.Name, c, local[n.Name], lo, hi, counts)
		}
	}
	return counts, nil
}
