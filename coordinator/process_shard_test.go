//go:build linux

package coordinator_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// This file runs a shard owner in a real OS process (the test binary
// re-executed with HOLDFAST_CHILD=owner), kills it with SIGKILL and measures
// how long its shards stay without an owner: the leader must expire its
// session a TTL after its last keepalive and grant the shards to the
// surviving nodes under larger tokens.

const (
	childEnvShards = "HOLDFAST_CHILD_SHARDS"
	childEnvTTL    = "HOLDFAST_CHILD_TTL"
	childEnvName   = "HOLDFAST_CHILD_NAME"

	ownerShards = 16
)

// ownerTimings sets the shard count and the session timings every node of
// these tests uses, the child included: the margin and the expiry grace
// scale with the TTL (for 3s they are DefaultLocalConfig's 300ms and
// 600ms).
func ownerTimings(c *coordinator.Config, shards int, ttl time.Duration) {
	c.Shards.Count = shards
	c.Session.TTL = ttl
	c.Session.LeaseMargin = ttl / 10
	c.Session.ExpiryGrace = ttl / 5
}

// acquireLog records, per shard grant, when a cluster node began to
// believe it (the lease's start on the owner's monotonic clock).
type acquireLog struct {
	mu          sync.Mutex
	starts      map[acquireKey]acquireRec
	activations []activation
}

type acquireKey struct {
	shard coordinator.ShardID
	token uint64
}

type acquireRec struct {
	node  string
	start time.Time
}

func newAcquireLog() *acquireLog { return &acquireLog{starts: map[acquireKey]acquireRec{}} }

// activation is a node's lessor taking over as leader: it extends every
// session's deadline to TTL + ExpiryGrace from then (lease rule 3 in docs/ARCHITECTURE.md).
type activation struct {
	node string
	at   time.Time
}

// watchLeaders records every later lessor activation of the cluster's
// running nodes.
func (a *acquireLog) watchLeaders(cl *holdfasttest.Cluster) {
	for _, n := range cl.Running() {
		name := n.Name
		n.C().SetLessorHooks(func(at time.Time) {
			a.mu.Lock()
			a.activations = append(a.activations, activation{node: name, at: at})
			a.mu.Unlock()
		}, nil)
	}
}

// activationsSince returns the activations from t on.
func (a *acquireLog) activationsSince(t time.Time) []activation {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []activation
	for _, act := range a.activations {
		if !act.at.Before(t) {
			out = append(out, act)
		}
	}
	return out
}

func (a *acquireLog) configure(i int, c *coordinator.Config) {
	node := c.NodeName
	c.Shards.Handler = coordinator.HandlerFuncs{ServeFunc: func(ctx context.Context, l *coordinator.ShardLease) {
		a.mu.Lock()
		a.starts[acquireKey{l.Shard(), l.Token()}] = acquireRec{node: node, start: coordinator.ShardLeaseStart(l)}
		a.mu.Unlock()
	}}
}

func (a *acquireLog) get(s coordinator.ShardID, token uint64) (acquireRec, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.starts[acquireKey{s, token}]
	return r, ok
}

// ownerCluster starts 3 voters on loopback TCP with the owner tests'
// timings and waits until it has formed and owns every shard.
func ownerCluster(tb testing.TB, ttl time.Duration, acq *acquireLog) *holdfasttest.Cluster {
	tb.Helper()
	cl := holdfasttest.Start(tb, holdfasttest.Options{Nodes: 3, Configure: func(i int, c *coordinator.Config) {
		ownerTimings(c, ownerShards, ttl)
		acq.configure(i, c)
	}})
	cl.WaitFormed(formTimeout)
	cl.WaitFor("the 3 nodes owning every shard, balanced", formTimeout, func() error {
		_, err := balanced(cl, ownerShards)
		return err
	})
	acq.watchLeaders(cl)
	return cl
}

// waitChildBalanced waits until the child owns at least one shard, every
// shard is owned (none revoking) by one of 4 owners (3 nodes and the
// child), each within ceil(S/4·1.05) (and at least floor(S/4·0.95): the
// rebalancing moves one shard at a time, and between two moves the table
// is briefly complete with the child still short), and the child's
// printed set matches the table. It returns the tokens of the child's
// shards and its session.
func waitChildBalanced(tb testing.TB, cl *holdfasttest.Cluster, ch *ownerChild, timeout time.Duration) (map[coordinator.ShardID]uint64, string) {
	tb.Helper()
	hi := int(math.Ceil(float64(ownerShards) / 4 * 1.05))
	lo := int(math.Floor(float64(ownerShards) / 4 * 0.95))
	var tokens map[coordinator.ShardID]uint64
	var session string
	cl.WaitFor(ch.name+" owning shards in a balanced table", timeout, func() error {
		if err := ch.exitedEarly(); err != nil {
			return err
		}
		ref := cl.Node(0).C()
		counts := map[string]int{}
		mine := map[coordinator.ShardID]uint64{}
		sessions := map[string]bool{}
		for s := 0; s < ownerShards; s++ {
			sh, ok := ref.Table().Shard(coordinator.ShardID(s))
			o := sh.Owner
			if !ok || sh.State != coordinator.ShardOwned {
				return fmt.Errorf("%w: shard %d: %+v %v", holdfasttest.ErrNotYet, s, o, ok)
			}
			counts[o.Node.Name]++
			if o.Node.Name == ch.name {
				mine[coordinator.ShardID(s)] = o.Token
				sessions[o.Session] = true
			}
		}
		if len(counts) != 4 || counts[ch.name] == 0 {
			return fmt.Errorf("%w: owners %v", holdfasttest.ErrNotYet, counts)
		}
		for n, k := range counts {
			if k > hi || k < lo {
				return fmt.Errorf("%w: %s owns %d, want %d..%d: %v", holdfasttest.ErrNotYet, n, k, lo, hi, counts)
			}
		}
		printed, _ := ch.owned()
		want := make([]coordinator.ShardID, 0, len(mine))
		for s := range mine {
			want = append(want, s)
		}
		slices.Sort(want)
		if !slices.Equal(printed, want) {
			return fmt.Errorf("%w: %s printed %v, the table gives it %v", holdfasttest.ErrNotYet, ch.name, printed, want)
		}
		if len(sessions) != 1 {
			return fmt.Errorf("%w: %s owns shards under sessions %v", holdfasttest.ErrNotYet, ch.name, sessions)
		}
		for s := range sessions {
			session = s
		}
		tokens = mine
		return nil
	})
	return tokens, session
}

// reown is what killAndMeasure saw.
type reown struct {
	// acquired is from the kill to the latest instant a surviving node
	// began to believe one of the child's shards (exact); observed is from
	// the kill to when the polling saw every shard re-owned (up to one poll
	// interval later).
	acquired, observed time.Duration
	// deadline is the leader's session deadline for the child, from the
	// kill (the expiry cannot come earlier); zero if unknown.
	deadline time.Duration
	owners   map[coordinator.ShardID]coordinator.Holder
	// leaders describes the leader activations between the kill and the
	// re-own ("" if none): each one pushes every deadline to TTL + grace
	// from its activation.
	leaders string
}

// killAndMeasure SIGKILLs the child and waits until each of its shards is
// owned (not revoking) by another node under a larger token than tokens
// gives, and that node has begun to believe it.
func killAndMeasure(tb testing.TB, cl *holdfasttest.Cluster, ch *ownerChild, acq *acquireLog,
	tokens map[coordinator.ShardID]uint64, session string, timeout time.Duration) reown {
	tb.Helper()
	var deadline time.Time
	if l, err := cl.Leader(); err == nil {
		deadline, _ = l.C().LessorDeadline(session)
	}
	killed := time.Now()
	if err := syscall.Kill(ch.pid, syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	var r reown
	ref := cl.Node(0).C()
	cl.WaitFor(fmt.Sprintf("%d shards of %s re-owned", len(tokens), ch.name), timeout, func() error {
		owners := map[coordinator.ShardID]coordinator.Holder{}
		var latest time.Time
		for s, old := range tokens {
			sh, _ := ref.Table().Shard(s)
			o := sh.Owner
			switch {
			case sh.State == coordinator.ShardFree:
				return fmt.Errorf("%w: shard %d free", holdfasttest.ErrNotYet, s)
			case sh.State == coordinator.ShardRevoking:
				return fmt.Errorf("%w: shard %d revoking: %+v", holdfasttest.ErrNotYet, s, o)
			case o.Node.Name == ch.name:
				return fmt.Errorf("%w: shard %d still owned by %s (token %d)", holdfasttest.ErrNotYet, s, o.Node, o.Token)
			case o.Token <= old:
				return fmt.Errorf("%w: shard %d owned by %s with token %d, not above %d", holdfasttest.ErrNotYet, s, o.Node, o.Token, old)
			}
			rec, ok := acq.get(s, o.Token)
			if !ok {
				return fmt.Errorf("%w: %s has not begun to believe shard %d token %d", holdfasttest.ErrNotYet, o.Node, s, o.Token)
			}
			if rec.node != o.Node.Name {
				return fmt.Errorf("shard %d token %d: the table names %s, %s believes it", s, o.Token, o.Node, rec.node)
			}
			if rec.start.After(latest) {
				latest = rec.start
			}
			owners[s] = o
		}
		r.observed = time.Since(killed)
		r.acquired = latest.Sub(killed)
		r.owners = owners
		return nil
	})
	if !deadline.IsZero() {
		r.deadline = deadline.Sub(killed)
	}
	var acts []string
	for _, act := range acq.activationsSince(killed) {
		if d := act.at.Sub(killed); d <= r.observed {
			acts = append(acts, fmt.Sprintf("%s at +%v", act.node, d.Round(time.Millisecond)))
		}
	}
	if len(acts) > 0 {
		r.leaders = "leader activations after the kill: " + strings.Join(acts, ", ")
	}
	select {
	case <-ch.exited:
	case <-time.After(10 * time.Second):
		tb.Fatalf("%s was not reaped within 10s of SIGKILL", ch.name)
	}
	return r
}

// TestSIGKILLOwnerShardsReowned: a shard owner in its own process is
// SIGKILLed; every shard it owned is owned by a surviving node under a
// larger token within SessionTTL + ExpiryGrace + 2s.
func TestSIGKILLOwnerShardsReowned(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and waits out a session TTL")
	}
	const (
		ttl     = 3 * time.Second
		timeout = 90 * time.Second
	)
	acq := newAcquireLog()
	cl := ownerCluster(t, ttl, acq)
	cfg := cl.Node(0).Config
	bound := cfg.Session.TTL + cfg.Session.ExpiryGrace + 2*time.Second

	ch := startOwnerChild(t, cl.Node(0).C().GossipAddr(), "child", ownerShards, ttl)
	tokens, session := waitChildBalanced(t, cl, ch, timeout)
	t.Logf("the child owns shards %v (tokens %v)", sortedShards(tokens), tokens)

	r := killAndMeasure(t, cl, ch, acq, tokens, session, timeout)
	t.Logf("SIGKILL → every shard re-owned: %v (new owners began believing; the poll saw it after %v); "+
		"the leader's deadline for the child's session was %v after the kill; bound %v",
		r.acquired, r.observed, r.deadline, bound)
	if r.leaders != "" {
		t.Log(r.leaders)
	}
	if r.acquired > bound {
		t.Errorf("the child's shards were re-owned %v after SIGKILL, want at most SessionTTL + ExpiryGrace + 2s = %v (%s)",
			r.acquired, bound, cmp.Or(r.leaders, "no leader change in between"))
	}
	for _, s := range sortedShards(tokens) {
		o := r.owners[s]
		if o.Token <= tokens[s] {
			t.Errorf("shard %d: token %d after the child's %d", s, o.Token, tokens[s])
		}
		t.Logf("shard %d: child token %d → %s token %d", s, tokens[s], o.Node, o.Token)
	}
	// The replica agrees with what the wait saw: tokens never go back.
	for s, old := range tokens {
		if o, ok := cl.Node(0).C().Owner(s); !ok || o.Node.Name == "child" || o.Token <= old {
			t.Errorf("shard %d now: %+v %v (the child's token was %d)", s, o, ok, old)
		}
	}
}

// BenchmarkShardReownAfterSIGKILL measures, with SessionTTL = 2s, the time
// from SIGKILL of a shard-owning child process until every shard it owned
// is believed by a surviving node under a larger token. Each iteration
// starts a fresh child (named child-1, child-2, …: memberlist does not
// let a new address reclaim a dead node's name), waits until it owns its
// share, and kills it; ns/op covers only the kill-to-reown time. Run with
// -benchtime 5x (or so): each iteration takes several seconds.
func BenchmarkShardReownAfterSIGKILL(b *testing.B) {
	const (
		ttl     = 2 * time.Second
		timeout = 90 * time.Second
	)
	acq := newAcquireLog()
	cl := ownerCluster(b, ttl, acq)
	join := cl.Node(0).C().GossipAddr()
	var times []time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		ch := startOwnerChild(b, join, fmt.Sprintf("child-%d", i), ownerShards, ttl)
		tokens, session := waitChildBalanced(b, cl, ch, timeout)
		b.StartTimer()
		r := killAndMeasure(b, cl, ch, acq, tokens, session, timeout)
		b.StopTimer()
		b.Logf("iteration %d: %d shards re-owned %v after SIGKILL (poll saw %v; leader deadline %v after the kill)",
			i, len(tokens), r.acquired, r.observed, r.deadline)
		if r.leaders != "" {
			b.Logf("iteration %d: %s", i, r.leaders)
		}
		times = append(times, r.acquired)
		b.StartTimer()
	}
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	med := times[len(times)/2]
	if len(times)%2 == 0 {
		med = (times[len(times)/2-1] + times[len(times)/2]) / 2
	}
	b.ReportMetric(ms(med), "ms-median/op")
	b.ReportMetric(ms(times[0]), "ms-min/op")
	b.ReportMetric(ms(times[len(times)-1]), "ms-max/op")
}

func sortedShards(m map[coordinator.ShardID]uint64) []coordinator.ShardID {
	out := make([]coordinator.ShardID, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
