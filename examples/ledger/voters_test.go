//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
)

// This file holds what the restart and recovery scenarios share: voters
// started, stopped and restarted as processes on loopback (-insecure),
// each restart on new ports (":0"), as a container that comes back with
// another address would; and the checks on the raft group seen from a
// live node.

// startVoters starts the named voters (-data, -expect len(names), and
// their flags in extra) and then the other nodes of extra with their
// flags, waits until every one is ready and the table is steady, and makes
// the first voter the observer.
func startVoters(t *testing.T, lc *ledgerCluster, names []string, extra map[string][]string) {
	t.Helper()
	start := time.Now()
	var join string
	for i, name := range names {
		args := append(lc.voterArgs(name, len(names)), extra[name]...)
		if i > 0 {
			args = append(args, "-join", join)
		}
		p := lc.start(t, name, args...)
		if i == 0 {
			lc.observer = p
			join = p.waitListening(t, 30*time.Second).kv["gossip"]
		}
	}
	all := slices.Clone(names)
	for name, args := range extra {
		if !slices.Contains(names, name) {
			lc.start(t, name, append(args, "-join", join)...)
			all = append(all, name)
		}
	}
	for _, name := range all {
		lc.procs[name].waitReady(t, 60*time.Second)
	}
	lc.waitSteady(t, all...)
	t.Logf("%v started; steady after %v", all, time.Since(start).Round(time.Millisecond))
}

// voterArgs are a voter's flags: its data dir under lc.dir and -expect.
func (lc *ledgerCluster) voterArgs(name string, expect int) []string {
	return []string{"-data", filepath.Join(lc.dir, name), "-expect", fmt.Sprint(expect)}
}

// gossipOf is the gossip address a node printed when it last started.
func (p *proc) gossipOf() string {
	evs := p.out.events("listening")
	if len(evs) == 0 {
		return ""
	}
	return evs[0].kv["gossip"]
}

// restartVoter starts voter name again on its data dir, joining through
// live node via, and waits for its listening line. A node that left
// gossip (SIGTERM) comes back on new ports, as a container with a new
// address would, once every running node has heard of its leave: until
// then gossip refuses the name at another address (New fails, or a member
// that still believes the old one alive ignores the new one and keeps
// sending raft's traffic to the old address until it declares it dead). A
// crashed one (sameAddr) comes back on the ports it had, as a supervisor
// restarts it. It returns the process and when it was started (after that
// wait).
func (lc *ledgerCluster) restartVoter(t *testing.T, name, via string, expect int, sameAddr bool) (*proc, time.Time) {
	t.Helper()
	old := lc.procs[name]
	if err := old.alive(); err == nil {
		t.Fatalf("%s is still running", name)
	}
	args := append(lc.voterArgs(name, expect), "-join", lc.procs[via].gossipOf())
	if !sameAddr {
		lc.waitNotAlive(t, name)
	}
	if sameAddr {
		ev := old.out.events("listening")[0]
		args = append(args, "-gossip", ev.kv["gossip"], "-rpc", ev.kv["rpc"], "-http", ev.kv["http"])
		if h := lc.held[name]; h != nil {
			h.release()
			delete(lc.held, name)
		}
	}
	started := time.Now()
	p := lc.start(t, name, args...)
	p.waitListening(t, 30*time.Second)
	return p, started
}

// waitNotAlive waits until every running node lists name as left or
// failed.
func (lc *ledgerCluster) waitNotAlive(t *testing.T, name string) {
	t.Helper()
	poll(t, "every running node to see "+name+" gone", 60*time.Second, func() error {
		for other, p := range lc.procs {
			if other == name || p.alive() != nil {
				continue
			}
			st, err := p.status()
			if err != nil {
				return notYet("%s: %v", other, err)
			}
			for _, m := range st.Members {
				if m.Name == name && m.State == "alive" {
					return notYet("%s sees %s alive", other, name)
				}
			}
		}
		return nil
	})
}

// terminate sends SIGTERM to name and waits for a clean exit.
func (lc *ledgerCluster) terminate(t *testing.T, name string) {
	t.Helper()
	p := lc.procs[name]
	p.signal(t, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s still running 60s after SIGTERM", name)
	}
	if p.waitErr != nil {
		t.Fatalf("%s after SIGTERM: %v, want exit status 0", name, p.waitErr)
	}
}

// crash sends SIGKILL to name, reaps it, and holds its ports until
// restartVoter brings it back on them (portHold).
func (lc *ledgerCluster) crash(t *testing.T, name string) {
	t.Helper()
	lc.procs[name].kill()
	if lc.held == nil {
		lc.held = map[string]*portHold{}
	}
	h := holdPorts(lc.procs[name])
	lc.held[name] = h
	t.Cleanup(h.release)
}

// observeFrom makes the first live node of names the observer.
func (lc *ledgerCluster) observeFrom(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if p := lc.procs[n]; p != nil && p.alive() == nil {
			lc.observer = p
			return
		}
	}
	t.Fatalf("none of %v is running", names)
}

// voterIDs returns the voter IDs the observer's status lists.
func (lc *ledgerCluster) voterIDs() ([]string, error) {
	st, err := lc.observer.status()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, v := range st.Voters {
		ids = append(ids, v.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

// waitLeaderAmong waits until the observer names a raft leader among names
// and returns it.
func (lc *ledgerCluster) waitLeaderAmong(t *testing.T, timeout time.Duration, names ...string) string {
	t.Helper()
	var leader string
	poll(t, fmt.Sprintf("a raft leader among %v", names), timeout, func() error {
		leader = lc.observer.raftLeader()
		if !slices.Contains(names, leader) {
			return notYet("leader %q", leader)
		}
		return nil
	})
	return leader
}

// waitServing waits until every shard is owned by one of live and written
// under its grant (fence = token), each token above before's for the
// shard (when before has it), and returns how long after since that was.
func (lc *ledgerCluster) waitServing(t *testing.T, live []string, before map[uint32]uint64, since time.Time) time.Duration {
	t.Helper()
	poll(t, fmt.Sprintf("every shard owned by %v and written to", live), 90*time.Second, func() error {
		l, err := lc.observer.shards()
		if err != nil {
			return notYet("%v", err)
		}
		if len(l.Shards) != testShards {
			return notYet("%d shards listed", len(l.Shards))
		}
		for _, r := range l.Shards {
			if r.State != "owned" || !slices.Contains(live, r.Owner) {
				return notYet("shard %d %s by %q", r.Shard, r.State, r.Owner)
			}
			if old, ok := before[r.Shard]; ok && r.Token <= old {
				return notYet("shard %d token %d, not above %d", r.Shard, r.Token, old)
			}
			if f, err := lc.fence(r.Shard); err != nil || f != r.Token {
				return notYet("shard %d: fence %d (%v), token %d", r.Shard, f, err, r.Token)
			}
		}
		return nil
	})
	return time.Since(since)
}

// waitHealthyVoters waits until the observer reports want voters, all
// healthy in the leader's judgement, and returns the status.
func (lc *ledgerCluster) waitHealthyVoters(t *testing.T, want int) admin.Status {
	t.Helper()
	var st admin.Status
	poll(t, fmt.Sprintf("%d healthy voters", want), 90*time.Second, func() error {
		var err error
		if st, err = lc.observer.status(); err != nil {
			return notYet("%v", err)
		}
		if g := st.Group; !g.Known || g.Degraded || g.HealthyVoters != want || len(st.Voters) != want {
			return notYet("group %+v, voters %v", g, st.Voters)
		}
		return nil
	})
	return st
}

// tokensNow returns every shard's token in the observer's table.
func (lc *ledgerCluster) tokensNow(t *testing.T) map[uint32]uint64 {
	t.Helper()
	l, err := lc.observer.shards()
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]uint64{}
	for _, r := range l.Shards {
		out[r.Shard] = r.Token
	}
	return out
}

// rejectedBy counts the fence's refusals of each node's writes.
func (lc *ledgerCluster) rejectedBy(t *testing.T) map[string]int {
	t.Helper()
	rows, err := lc.db.Query("SELECT node, count(*) FROM rejected GROUP BY node")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var node string
		var n int
		if err := rows.Scan(&node, &n); err != nil {
			t.Fatal(err)
		}
		out[node] = n
	}
	return out
}

// checkVoterCounts kills the node of dataDir's name and checks that no
// configuration in its raft log has fewer than want voters.
func (lc *ledgerCluster) checkVoterCounts(t *testing.T, name string, want int) {
	t.Helper()
	lc.procs[name].kill()
	hist := configHistory(t, filepath.Join(lc.dir, name))
	for i, voters := range hist {
		if len(voters) < want {
			t.Errorf("configuration %d of %s's raft log has %d voters: %v", i, name, len(voters), voters)
		}
	}
	t.Logf("voter counts in %s's raft log: %v", name, voterCounts(hist))
}
