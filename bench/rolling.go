package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The rolling-restart workload (-rolling 3,9): N holdfast nodes as OS
// processes own 256 shards; each owner writes each of its shards every
// 10 ms, and a shard's first write waits for a 200 ms warm-up (done by
// ShardPreparer.Prepare ahead of a planned move, or after the grant
// without it). Every node in turn gets SIGTERM (a graceful Shutdown that
// hands its shards off), is started again on its data dir, and the run
// waits for balance before the next. Each grant's writes are recorded
// (first and last, under Checkpoint); per shard the serving gap of a move
// is the first write of the new grant minus the last write of the one
// before. A stale write is a write of a grant after the first write of a
// newer grant of the same shard.

// rollCase is one row of the workload.
type rollCase struct {
	nodes   int
	prepare bool
}

// rollResult is one row's figures.
type rollResult struct {
	moves, stale  int
	p50, p99, max time.Duration
	took          time.Duration
}

// rollingWorkload runs each node count with and without prepare and
// prints one line per row.
func rollingWorkload(w io.Writer, counts []int, o rollOptions, modes string) error {
	preps := map[string][]bool{"both": {false, true}, "off": {false}, "on": {true}}[modes]
	if preps == nil {
		return fmt.Errorf("bad -rolling-prepare %q: both, on or off", modes)
	}
	fmt.Fprintf(w, "rolling restart: %d shards, each written every %v by its owner, warm-up %v; SIGTERM, restart, wait for balance, next node\n",
		o.shards, o.interval, o.warmup)
	fmt.Fprintf(w, "%-6s %-8s %6s %9s %9s %9s %6s %8s\n", "nodes", "prepare", "moves", "gap p50", "gap p99", "gap max", "stale", "took")
	for _, n := range counts {
		for _, prep := range preps {
			o.prepare = prep
			res, err := rollingRun(n, o)
			if err != nil {
				return fmt.Errorf("rolling restart of %d nodes (prepare %t): %w", n, prep, err)
			}
			fmt.Fprintf(w, "%-6d %-8t %6d %9s %9s %9s %6d %8s\n", n, prep, res.moves,
				msec(res.p50), msec(res.p99), msec(res.max), res.stale, res.took.Round(time.Second))
		}
	}
	return nil
}

func msec(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/1e6) }

// rollNode is one node's process and addresses.
type rollNode struct {
	c           *child
	gossip, rpc string
}

func rollingRun(n int, o rollOptions) (rollResult, error) {
	var res rollResult
	dir, err := os.MkdirTemp("", "holdfast-rolling-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	rc := &rollCluster{n: n, o: o, dir: dir, nodes: make([]*rollNode, n)}
	defer rc.stopAll()
	if err := rc.form(); err != nil {
		return res, err
	}
	began := time.Now()
	if err := rc.roll(began); err != nil {
		return res, err
	}
	res.took = time.Since(began)
	// The last moves' first writes may follow the balance by a warm-up:
	// let them come before the nodes stop (a stop without handoff, whose
	// expiries come a TTL later, after the window).
	time.Sleep(o.warmup + time.Second)
	ended := time.Now()
	rc.stopAll()
	gaps, stale, err := readGaps(dir, began, ended)
	if err != nil {
		return res, err
	}
	res.stale = stale
	res.moves = len(gaps)
	if len(gaps) > 0 {
		sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
		res.p50, res.p99, res.max = gaps[len(gaps)/2], gaps[min(len(gaps)-1, len(gaps)*99/100)], gaps[len(gaps)-1]
	}
	return res, nil
}

// rollCluster is the child processes of one rolling-restart row.
type rollCluster struct {
	n     int
	o     rollOptions
	dir   string
	nodes []*rollNode
}

// stopAll stops every node still running.
func (rc *rollCluster) stopAll() {
	for _, nd := range rc.nodes {
		if nd != nil && nd.c != nil {
			nd.c.stop()
			nd.c = nil
		}
	}
}

// spawnNode starts node i's process (on its earlier ports when it ran
// before) and waits for its addresses.
func (rc *rollCluster) spawnNode(i int, join string) error {
	oo := rc.o
	oo.expect = 0
	if i < 3 {
		oo.expect = min(rc.n, 3)
	}
	args := []string{"-child", "rolling", "-child-index", strconv.Itoa(i), "-child-n", strconv.Itoa(rc.n),
		"-child-dir", rc.dir, "-child-join", join, "-child-opts", oo.String()}
	if nd := rc.nodes[i]; nd != nil {
		args = append(args, "-child-ports", nd.gossip+","+nd.rpc)
	}
	c, err := spawn(args...)
	if err != nil {
		return err
	}
	addr, err := c.expect("ADDR ", 60*time.Second)
	if err != nil {
		return err
	}
	g, rpc, _ := strings.Cut(addr, " ")
	rc.nodes[i] = &rollNode{c: c, gossip: g, rpc: rpc}
	return nil
}

// start spawns node i and waits until it is ready.
func (rc *rollCluster) start(i int, join string) error {
	if err := rc.spawnNode(i, join); err != nil {
		return err
	}
	_, err := rc.nodes[i].c.expect("READY", 120*time.Second)
	return err
}

// seeds lists the gossip addresses of the running nodes but skip.
func (rc *rollCluster) seeds(skip int) string {
	var out []string
	for j, nd := range rc.nodes {
		if j != skip && nd != nil && nd.c != nil {
			out = append(out, nd.gossip)
		}
	}
	return strings.Join(out, ",")
}

// form starts the cluster: the first three bootstrap together, the rest
// join them; it returns once the shards are balanced.
func (rc *rollCluster) form() error {
	for i := 0; i < min(rc.n, 3); i++ {
		join := ""
		if i > 0 {
			join = rc.nodes[0].gossip
		}
		if err := rc.spawnNode(i, join); err != nil {
			return err
		}
	}
	for i := 0; i < min(rc.n, 3); i++ {
		if _, err := rc.nodes[i].c.expect("READY", 120*time.Second); err != nil {
			return err
		}
	}
	for i := 3; i < rc.n; i++ {
		if err := rc.start(i, rc.seeds(i)); err != nil {
			return err
		}
	}
	return waitRollBalanced(rc.nodes[0].c, rc.n)
}

// roll restarts every node in turn: SIGTERM, wait for its exit, start it
// again on the same data dir, wait for balance.
func (rc *rollCluster) roll(began time.Time) error {
	debug := os.Getenv("ROLL_DEBUG") != ""
	for i, nd := range rc.nodes {
		if debug {
			nd.c.send("leader")
			l, _ := nd.c.expect("LEADER ", 10*time.Second)
			fmt.Fprintf(os.Stderr, "SIGTERM node %d at +%v (raft leader: %s)\n", i, time.Since(began).Round(time.Millisecond), l)
		}
		if err := nd.c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			return err
		}
		if err := waitExit(nd.c, 90*time.Second); err != nil {
			return fmt.Errorf("node %d after SIGTERM: %w", i, err)
		}
		nd.c = nil
		if debug {
			fmt.Fprintf(os.Stderr, "node %d exited at +%v\n", i, time.Since(began).Round(time.Millisecond))
		}
		if err := rc.start(i, rc.seeds(i)); err != nil {
			return fmt.Errorf("restarting node %d: %w", i, err)
		}
		if err := waitRollBalanced(rc.nodes[i].c, rc.n); err != nil {
			return err
		}
	}
	return nil
}

// waitExit waits for the child's process to end.
func waitExit(c *child, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		c.cmd.Process.Kill()
		return errors.New("did not exit")
	}
}

// waitRollBalanced asks c until it sees the shards balanced among n nodes.
func waitRollBalanced(c *child, n int) error {
	return poll(180*time.Second, func() error {
		if err := c.send(fmt.Sprintf("balanced %d", n)); err != nil {
			return err
		}
		ans, err := c.expect("BALANCED ", 30*time.Second)
		if err != nil {
			return err
		}
		if ans != "yes" {
			time.Sleep(20 * time.Millisecond) // polling a condition: the child answers at once
			return errNotYet
		}
		return nil
	})
}

// readGaps reads every spans file in dir and returns the serving gaps of
// the moves whose new grant first wrote within [from, to], and the number
// of stale writes over the whole run.
func readGaps(dir string, from, to time.Time) ([]time.Duration, int, error) {
	type rec struct {
		token       uint64
		first, last int64
		file        string
	}
	per := map[int][]rec{}
	files, err := filepath.Glob(filepath.Join(dir, "spans-*.txt"))
	if err != nil {
		return nil, 0, err
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, 0, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var shard, writes int
			r := rec{file: filepath.Base(name)}
			if _, err := fmt.Sscanf(sc.Text(), "%d %d %d %d %d", &shard, &r.token, &r.first, &r.last, &writes); err == nil {
				per[shard] = append(per[shard], r)
			}
		}
		f.Close()
	}
	var gaps []time.Duration
	stale := 0
	for _, rs := range per {
		sort.Slice(rs, func(i, j int) bool { return rs[i].token < rs[j].token })
		for i := 1; i < len(rs); i++ {
			prev, cur := rs[i-1], rs[i]
			for _, older := range rs[:i] {
				if older.last > cur.first {
					stale++
				}
			}
			if t := time.Unix(0, cur.first); !t.Before(from) && !t.After(to) {
				gaps = append(gaps, time.Duration(cur.first-prev.last))
				if os.Getenv("ROLL_DEBUG") != "" && time.Duration(cur.first-prev.last) > 40*time.Millisecond {
					fmt.Fprintf(os.Stderr, "gap %v at +%v (token %d %s -> %d %s)\n", time.Duration(cur.first-prev.last).Round(time.Millisecond),
						time.Unix(0, prev.last).Sub(from).Round(time.Millisecond), prev.token, prev.file, cur.token, cur.file)
				}
			}
		}
	}
	return gaps, stale, nil
}
