package coordinator_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// logCapture records log messages (and their "foreign_cluster" attribute)
// on top of the harness's logger.
type logCapture struct {
	slog.Handler
	mu   *sync.Mutex
	seen *[]string
}

func newLogCapture(inner slog.Handler) *logCapture {
	return &logCapture{Handler: inner, mu: &sync.Mutex{}, seen: new([]string)}
}

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCapture) Handle(ctx context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "foreign_cluster" {
			line += " " + a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	*h.seen = append(*h.seen, line)
	h.mu.Unlock()
	if h.Handler.Enabled(ctx, r.Level) {
		return h.Handler.Handle(ctx, r)
	}
	return nil
}

func (h *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	return &logCapture{Handler: h.Handler.WithAttrs(as), mu: h.mu, seen: h.seen}
}

func (h *logCapture) WithGroup(g string) slog.Handler {
	return &logCapture{Handler: h.Handler.WithGroup(g), mu: h.mu, seen: h.seen}
}

func (h *logCapture) contains(s string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range *h.seen {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func TestTwoClustersNeverMerge(t *testing.T) {
	t.Parallel()
	captures := map[string]*logCapture{}
	var mu sync.Mutex
	capture := func(prefix string) func(int, *coordinator.Config) {
		return func(i int, c *coordinator.Config) {
			h := newLogCapture(c.Logger.Handler())
			c.Logger = slog.New(h)
			c.NodeName = fmt.Sprintf("%s%d", prefix, i)
			mu.Lock()
			captures[c.NodeName] = h
			mu.Unlock()
		}
	}
	a := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: capture("a")})
	b := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: capture("b")})
	la, lb := a.WaitFormed(formTimeout), b.WaitFormed(formTimeout)
	idA, idB := la.C().ClusterID(), lb.C().ClusterID()
	if idA == idB {
		t.Fatal("two clusters share an ID")
	}
	// Join cluster B's node into A's gossip pool, and A's into B's.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, errB := lb.C().Join(ctx, []string{la.C().GossipAddr()})
	_, errA := la.C().Join(ctx, []string{lb.C().GossipAddr()})
	t.Logf("cross joins: %v / %v", errB, errA)
	a.WaitFor("both sides to log and refuse the foreign cluster", formTimeout, func() error {
		if !captures[la.Name].contains("refusing member of a foreign cluster " + idB) {
			return fmt.Errorf("%w: %s has not refused %s", holdfasttest.ErrNotYet, la.Name, idB)
		}
		if !captures[lb.Name].contains("refusing member of a foreign cluster " + idA) {
			return fmt.Errorf("%w: %s has not refused %s", holdfasttest.ErrNotYet, lb.Name, idA)
		}
		return nil
	})
	for _, cl := range []*holdfasttest.Cluster{a, b} {
		leader := cl.WaitFormed(formTimeout)
		id := leader.C().ClusterID()
		for _, n := range cl.Running() {
			for _, m := range n.C().Members() {
				if m.ClusterID != "" && m.ClusterID != id {
					t.Errorf("%s (cluster %s) lists %s of cluster %s", n.Name, id, m.Name, m.ClusterID)
				}
			}
		}
		if v := len(leader.C().Voters()); v != 3 {
			t.Errorf("cluster %s has %d voters", id, v)
		}
	}
}

// bootstrapSeeds is how many seeded random start orders the four-node
// bootstrap test tries: 6, or 2 under the race detector;
// HOLDFAST_BOOTSTRAP_SEEDS sets more for a longer soak.
func bootstrapSeeds(t *testing.T) int {
	if s := os.Getenv("HOLDFAST_BOOTSTRAP_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("HOLDFAST_BOOTSTRAP_SEEDS: %v", err)
		}
		return n
	}
	if chaosRace {
		return 2
	}
	return 6
}

// TestFourFreshNodesFormOneCluster starts four fresh nodes with
// BootstrapExpect=3 in random orders with random gaps on the in-memory
// network: always exactly one cluster.
func TestFourFreshNodesFormOneCluster(t *testing.T) {
	t.Parallel()
	sem := make(chan struct{}, 3) // seeds run three at a time
	for seed := int64(1); seed <= int64(bootstrapSeeds(t)); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			t.Logf("replay: go test ./coordinator -run 'TestFourFreshNodesFormOneCluster/seed=%d$'", seed)
			rng := rand.New(rand.NewPCG(uint64(seed), 0))
			cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 4, Voters: 3, InMemory: true, Seed: seed, NoStart: true})
			cl.Net.SetDelay("", "", 0, 5*time.Millisecond)
			for _, i := range rng.Perm(4) {
				gap := time.Duration(rng.IntN(300)) * time.Millisecond
				time.Sleep(gap) // the gap is the scenario (a start order), not synchronisation
				cl.Start(i)
			}
			checkOneCluster(t, cl)
			waitSuffrages(t, cl, 3, 1)
		})
	}
}

// envInt reads a positive count from the environment, or returns def.
func envInt(name string, def int) int {
	if s := os.Getenv(name); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return def
}
