//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/internal/netns"
)

// The network-cut scenarios: ledger processes (-ttl 2s, the local timing
// profile) each in its own network namespace on one bridge, sharing one
// SQLite file; a cut sets a node's bridge port down. Every writer checks
// its lease inside each write transaction, so a fence refusal would mean
// two nodes believed in one shard at once.

const (
	cutShards = 12
	// cutFor is how long a cut node stays cut before it is healed: 3 × TTL.
	cutFor = 3 * testTTL
	// healedGap is the pause between healing one node and cutting the next.
	healedGap = 2 * time.Second
	// restartAfter stands in for "a minute" in the killed-voter scenario:
	// five times the local profile's DeadServerStabilization (2s), well
	// past the point where the old rule removed a failed voter.
	restartAfter = 10 * time.Second
)

// reownBound is the bound on re-owning every shard after a cut: TTL +
// expiry grace + an election (heartbeat timeout to notice, election
// timeout to elect) + 2s. electionAllowed is the election's part of it.
var reownBound, electionAllowed = func() (time.Duration, time.Duration) {
	cfg := clusterConfig(options{ttl: testTTL})
	election := cfg.Raft.HeartbeatTimeout + cfg.Raft.ElectionTimeout
	return testTTL + cfg.Session.ExpiryGrace + election + 2*time.Second, election
}()

// cutCluster is a ledger cluster whose nodes run in network namespaces.
type cutCluster struct {
	*ledgerCluster
	net   *netns.Net
	nodes map[string]*netns.Node // by node name
	cut   map[string]bool        // nodes cut off or killed now
	figs  []string               // figures to report
}

// startCutCluster starts voters voter nodes (bootstrapping together) and
// spares voter-eligible nodes, n1 first, each in its own namespace.
func startCutCluster(t *testing.T, bin string, voters, spares int) *cutCluster {
	netns.Require(t)
	total := voters + spares
	cc := &cutCluster{ledgerCluster: &ledgerCluster{bin: bin, dir: t.TempDir(), procs: map[string]*proc{}},
		net: netns.New(t, total), nodes: map[string]*netns.Node{}, cut: map[string]bool{}}
	cc.dbPath = filepath.Join(cc.dir, "ledger.db")
	cc.db = openTestDB(t, cc.dbPath, 10000)
	start := time.Now()
	var names []string
	for i := range total {
		name := fmt.Sprintf("n%d", i+1)
		names = append(names, name)
		cc.nodes[name] = cc.net.Node(i)
		cc.startNode(t, name, voters)
	}
	cc.observer = cc.procs["n1"]
	for _, name := range names {
		cc.procs[name].waitReady(t, 60*time.Second)
	}
	cc.waitSteady(t, names...)
	cc.waitHealthy(t, voters)
	t.Logf("%d nodes started in namespaces; steady and healthy after %v", total, time.Since(start).Round(time.Millisecond))
	return cc
}

// startNode starts (or restarts, with its data dir) node name in its
// namespace.
func (cc *cutCluster) startNode(t *testing.T, name string, voters int) *proc {
	nd := cc.nodes[name]
	seed := cc.net.Node(0).Addr(7946)
	args := cc.args("-insecure", "-shards", strconv.Itoa(cutShards), "-voters", strconv.Itoa(voters),
		"-data", filepath.Join(cc.dir, name), "-expect", strconv.Itoa(voters), "-join", seed,
		"-gossip", nd.Addr(7946), "-rpc", nd.Addr(7947), "-http", nd.Addr(8080))
	p := startCmd(t, name, nd.Command(cc.bin, append([]string{"-node", name}, args...)...))
	p.client = nd.HTTPClient()
	cc.procs[name] = p
	return p
}

// live returns the names of the nodes neither cut nor killed.
func (cc *cutCluster) live() []string {
	var out []string
	for name := range cc.nodes {
		if !cc.cut[name] && cc.procs[name] != nil && cc.procs[name].alive() == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// observe makes a live node the one whose view the checks read.
func (cc *cutCluster) observe(t *testing.T) {
	live := cc.live()
	if len(live) == 0 {
		t.Fatal("no live node to observe")
	}
	cc.observer = cc.procs[live[0]]
}

// leaderAndFollowers returns the raft leader's name, as the observer knows
// it, and the other live voters, sorted.
func (cc *cutCluster) leaderAndFollowers(t *testing.T) (string, []string) {
	t.Helper()
	var st admin.Status
	poll(t, "a known raft leader", 30*time.Second, func() error {
		var err error
		if st, err = cc.observer.status(); err != nil {
			return notYet("%v", err)
		}
		if st.Leader == nil || st.Leader.Name == "" {
			return notYet("no leader known to %s", cc.observer.name)
		}
		return nil
	})
	var followers []string
	for _, v := range st.Voters {
		if v.Name != st.Leader.Name && v.Name != "" && !cc.cut[v.Name] {
			followers = append(followers, v.Name)
		}
	}
	slices.Sort(followers)
	return st.Leader.Name, followers
}

// waitHealthy waits until the observer reports want voters, all healthy.
func (cc *cutCluster) waitHealthy(t *testing.T, want int) admin.Status {
	t.Helper()
	var st admin.Status
	poll(t, fmt.Sprintf("%d healthy voters", want), 60*time.Second, func() error {
		var err error
		if st, err = cc.observer.status(); err != nil {
			return notYet("%v", err)
		}
		if g := st.Group; !g.Known || g.Degraded || g.HealthyVoters != want {
			return notYet("group %+v", g)
		}
		return nil
	})
	return st
}

// tolerance logs the fault tolerance the observer reports now.
func (cc *cutCluster) tolerance(t *testing.T, when string) {
	st, err := cc.observer.status()
	if err != nil {
		cc.figs = append(cc.figs, fmt.Sprintf("fault tolerance %s: unknown (%v)", when, err))
		return
	}
	g := st.Group
	cc.figs = append(cc.figs, fmt.Sprintf("fault tolerance %s (seen by %s): %d, %d/%d voters healthy, known=%v",
		when, cc.observer.name, g.FailureTolerance, g.HealthyVoters, g.Voters, g.Known))
}

// cutNodes cuts the named nodes' links and returns when.
func (cc *cutCluster) cutNodes(t *testing.T, names ...string) time.Time {
	for _, name := range names {
		cc.nodes[name].Cut()
		cc.cut[name] = true
	}
	cc.observe(t)
	return time.Now()
}

// healNodes heals the named nodes' links.
func (cc *cutCluster) healNodes(names ...string) {
	for _, name := range names {
		cc.nodes[name].Heal()
		delete(cc.cut, name)
	}
}

// waitReowned waits until every shard is owned by a live node that has
// written under its grant, asserts it took at most reownBound since the
// fault, and records the figure. A cut of the leader is followed by an
// election, and the sessions' deadlines run from the next leader's
// takeover (a new leader gives every session TTL + grace from then): when
// the observer saw no live leader for longer than reownBound allows for the
// election (split votes, a host starving the processes), the bound moves
// by as much, and the figure says so.
func (cc *cutCluster) waitReowned(t *testing.T, what string, since time.Time) {
	t.Helper()
	elected := cc.observer.leaderElected(since, func(l string) bool { return cc.cut[l] })
	poll(t, "every shard owned by a live node after "+what, 90*time.Second, func() error {
		l, err := cc.observer.shards()
		if err != nil {
			return notYet("%v", err)
		}
		if len(l.Shards) != cutShards {
			return notYet("%d shards listed", len(l.Shards))
		}
		for _, r := range l.Shards {
			if r.State == "free" || r.Owner == "" || cc.cut[r.Owner] {
				return notYet("shard %d %s by %q", r.Shard, r.State, r.Owner)
			}
			if f, err := cc.fence(r.Shard); err != nil || f != r.Token {
				return notYet("shard %d: fence %d (%v), token %d", r.Shard, f, err, r.Token)
			}
		}
		return nil
	})
	took := time.Since(since)
	bound := reownBound
	fig := fmt.Sprintf("every shard re-owned %v after %s", took.Round(time.Millisecond), what)
	if e := <-elected; e > electionAllowed {
		bound += e - electionAllowed
		fig += fmt.Sprintf(" (no live leader for %v: the bound moves to %v)", e.Round(time.Millisecond), bound)
	}
	cc.figs = append(cc.figs, fig)
	if took > bound {
		t.Errorf("shards re-owned %v after %s, beyond TTL + grace + election + 2s = %v", took, what, bound)
	}
}

// holdFault lets the current faults last until the given instant,
// sampling the observer's configuration meanwhile: it must keep want
// voters (a cut voter keeps its vote when nobody replaces it).
func (cc *cutCluster) holdFault(t *testing.T, until time.Time, want int) {
	t.Helper()
	for time.Now().Before(until) {
		if st, err := cc.observer.status(); err == nil && len(st.Voters) < want {
			t.Errorf("the configuration shrank to %d voters %v (want %d): a failed voter was removed with no replacement",
				len(st.Voters), st.Voters, want)
			return
		}
		time.Sleep(min(200*time.Millisecond, time.Until(until)+time.Millisecond)) // sampling while the fault lasts
	}
}

// recordAlive polls, until the given instant at most, every live node's
// member list for name alive, and records how long after healed it was
// alive in all of them.
func (cc *cutCluster) recordAlive(name string, healed, until time.Time) {
	for time.Now().Before(until) {
		if cc.aliveEverywhere(name) {
			cc.figs = append(cc.figs, fmt.Sprintf("%s alive in every member list %v after its heal",
				name, time.Since(healed).Round(time.Millisecond)))
			return
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
	cc.figs = append(cc.figs, fmt.Sprintf("%s not yet alive in every member list %v after its heal",
		name, until.Sub(healed).Round(time.Millisecond)))
}

// aliveEverywhere reports whether every live node lists name alive.
func (cc *cutCluster) aliveEverywhere(name string) bool {
	for _, n := range cc.live() {
		st, err := cc.procs[n].status()
		if err != nil {
			return false
		}
		ok := false
		for _, m := range st.Members {
			ok = ok || (m.Name == name && m.State == "alive")
		}
		if !ok {
			return false
		}
	}
	return true
}

// checkVoterHistory stops the observer and reads every configuration in
// its raft log: none may have fewer than want voters.
func (cc *cutCluster) checkVoterHistory(t *testing.T, want int) {
	t.Helper()
	p := cc.observer
	p.kill()
	hist := configHistory(t, filepath.Join(cc.dir, p.name))
	for i, voters := range hist {
		if len(voters) < want {
			t.Errorf("configuration %d of %s's raft log has %d voters: %v", i, p.name, len(voters), voters)
		}
	}
	t.Logf("voter counts in %s's raft log: %v", p.name, voterCounts(hist))
}

// checkNoDoubleOwner asserts the ledger saw no fence refusal and no stale
// write, audits the whole file, and logs the figures.
func (cc *cutCluster) checkNoDoubleOwner(t *testing.T) {
	t.Helper()
	var rejected int
	if err := cc.db.QueryRow("SELECT count(*) FROM rejected").Scan(&rejected); err != nil {
		t.Fatal(err)
	}
	if rejected > 0 {
		t.Errorf("%d writes refused by the fence: two nodes believed in one shard at once", rejected)
	}
	for name, p := range cc.procs {
		if n := len(p.out.events("rejected")); n > 0 {
			t.Errorf("%s printed %d rejected writes", name, n)
		}
	}
	cc.checkLedger(t)
	t.Logf("figures:\n  %s", strings.Join(cc.figs, "\n  "))
}
