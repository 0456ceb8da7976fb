package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/holdfast-go/holdfast/coordinator"
)

// scaleCase is one point of the scale curve.
type scaleCase struct {
	nodes, shards int
	// load makes every owner report its shards' load (Zipf, s = 1.1) as it
	// acquires them, so that the leader balances by load: "balanced" is
	// then a leader round that plans no move, by load.
	load bool
}

// String is the point as -scale names it: NODESxSHARDS[+load].
func (c scaleCase) String() string {
	if c.load {
		return fmt.Sprintf("%dx%d+load", c.nodes, c.shards)
	}
	return fmt.Sprintf("%dx%d", c.nodes, c.shards)
}

// scaleRow is what one point measured.
type scaleRow struct {
	c                     scaleCase
	form, owned, balanced time.Duration // from the first node's start
	dieOwned              time.Duration // from the kill to every shard owned by a running node
	startCPU              time.Duration // process CPU from start to balanced
	heapPerNode           float64       // MiB: live heap growth / nodes
	rss                   float64       // MiB: process VmRSS once balanced
	idleCPU               float64       // % of one core, whole process, steady state
	leaderCPU             float64       // % of one core, the leader's goroutines
	othersCPU             float64       // % of one core, every other node together
	unlabelledCPU         float64       // % of one core, goroutines no node started (timers, the network)
	joinMoves, joinLost   int           // shards that changed owner; nodes whose session changed
	join                  time.Duration // join → balanced again
	dieMoves, dieLost     int
	die                   time.Duration // kill → balanced again
	err                   string
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapLive() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// runScale measures one point: nodes in this process on the in-memory
// network, 3 voters with data dirs (bbolt, fsync on) and the rest raft
// non-voters on in-memory stores, DefaultLocalConfig timings (session TTL
// 3 s, join stabilization 1 s).
func runScale(c scaleCase, window, limit time.Duration) (row scaleRow) {
	row.c = c
	heap0 := heapLive()
	cpu0 := cpuTime()
	start := time.Now()
	var loads []float64
	if c.load {
		loads = zipf(rand.New(rand.NewPCG(placementSeed, 2)), c.shards, 1.1)
	}
	base := func() coordinator.Config {
		cfg := coordinator.DefaultLocalConfig()
		cfg.Cluster.ReplicaFeed = replicaFeed
		if loads != nil {
			cfg.Shards.Handler = coordinator.HandlerFuncs{ServeFunc: func(_ context.Context, l *coordinator.ShardLease) {
				l.ReportLoad(loads[l.Shard()])
			}}
		}
		return cfg
	}
	h, err := newHFCluster(hfOptions{voters: 3, shards: c.shards, inMemory: true, labels: true, base: base, byLoad: c.load})
	if err != nil {
		row.err = err.Error()
		return row
	}
	defer h.close()
	h.loads = loads
	fail := func(what string, err error) scaleRow {
		row.err = fmt.Sprintf("%s: %v", what, err)
		return row
	}
	for i := 0; i < c.nodes; i++ {
		if _, err := h.add(i < 3); err != nil {
			return fail("start", err)
		}
	}
	log.Printf("scale %s: %d nodes started in %s", c, c.nodes, secs(time.Since(start)))
	if err := h.waitReady(limit); err != nil {
		return fail("forming", err)
	}
	row.form = time.Since(start)
	if err := poll(limit, func() error { return h.ownedByLeader() }); err != nil {
		return fail(fmt.Sprintf("formed in %s; full ownership not reached (%s)", secs(row.form), h.progress()), err)
	}
	row.owned = time.Since(start)
	if err := poll(limit, h.balanced); err != nil {
		return fail(fmt.Sprintf("formed in %s, all owned in %s; balance not reached (%s)", secs(row.form), secs(row.owned), h.progress()), err)
	}
	row.balanced = time.Since(start)
	row.startCPU = cpuTime() - cpu0
	row.heapPerNode = float64(heapLive()-min(heap0, heapLive())) / float64(c.nodes) / (1 << 20)
	writeHeapProfile(c)
	row.rss = float64(readMem().RSSKiB) / 1024
	if err := h.profileSteady(window, &row); err != nil {
		return fail("profile", err)
	}
	if err := h.joinOne(limit, &row); err != nil {
		return fail("join", err)
	}
	if err := h.killOne(limit, &row); err != nil {
		return fail("death", err)
	}
	return row
}

// joinOne adds a diskless node and measures the time and the moves until
// the table is balanced again.
func (h *hfCluster) joinOne(limit time.Duration, row *scaleRow) error {
	before, err := h.owners()
	if err != nil {
		return err
	}
	sess := h.sessions()
	t0 := time.Now()
	if _, err := h.add(false); err != nil {
		return err
	}
	if err := poll(limit, h.balanced); err != nil {
		return fmt.Errorf("%s: %w", h.progress(), err)
	}
	row.join = time.Since(t0)
	after, err := h.owners()
	row.joinMoves, row.joinLost = moved(before, after), h.lost(sess)
	return err
}

// killOne closes a node that does not lead raft (a non-voter when there is
// one, so that no vote is lost) and measures the time and the moves until
// its shards are owned again and the table balanced.
func (h *hfCluster) killOne(limit time.Duration, row *scaleRow) error {
	before, err := h.owners()
	if err != nil {
		return err
	}
	var victim *hfNode
	for _, n := range h.followers() {
		if victim == nil || (!n.eligible && victim.eligible) {
			victim = n
		}
	}
	if victim == nil {
		return fmt.Errorf("no follower to kill")
	}
	sess := h.sessions()
	t0 := time.Now()
	h.kill(victim)
	if err := poll(limit, func() error { _, err := h.ownedByRunning(); return err }); err != nil {
		return fmt.Errorf("%s: %w", h.progress(), err)
	}
	row.dieOwned = time.Since(t0)
	if err := poll(limit, h.balanced); err != nil {
		return fmt.Errorf("%s: %w", h.progress(), err)
	}
	row.die = time.Since(t0)
	after, err := h.owners()
	row.dieMoves, row.dieLost = moved(before, after), h.lost(sess)
	return err
}

// profileSteady takes a CPU profile of the idle, balanced cluster for
// window and splits it by the node label every node's goroutines carry.
func (h *hfCluster) profileSteady(window time.Duration, row *scaleRow) error {
	l, err := h.leader()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	cpu0 := cpuTime()
	if profiling {
		time.Sleep(window)
		row.idleCPU = 100 * float64(cpuTime()-cpu0) / float64(window)
		return nil
	}
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return err
	}
	time.Sleep(window)
	pprof.StopCPUProfile()
	row.idleCPU = 100 * float64(cpuTime()-cpu0) / float64(window)
	if idleProfileDir != "" {
		name := fmt.Sprintf("idle-%dx%d.pprof", row.c.nodes, row.c.shards)
		if err := os.WriteFile(filepath.Join(idleProfileDir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
		log.Printf("scale %dx%d: idle profile in %s; the leader is %s", row.c.nodes, row.c.shards, name, l.name)
	}
	byNode, err := cpuByLabel(&buf)
	if err != nil {
		return err
	}
	row.leaderCPU = 100 * float64(byNode[l.name]) / float64(window)
	for _, n := range h.running() {
		if n != l {
			row.othersCPU += 100 * float64(byNode[n.name]) / float64(window)
		}
	}
	row.unlabelledCPU = 100 * float64(byNode[unlabelled]) / float64(window)
	return nil
}

const unlabelled = "(unlabelled)"

// cpuByLabel sums a CPU profile's nanoseconds by the "node" label.
func cpuByLabel(r io.Reader) (map[string]time.Duration, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return nil, err
	}
	vi := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			vi = i
		}
	}
	if vi < 0 {
		return nil, fmt.Errorf("no cpu sample type")
	}
	out := map[string]time.Duration{}
	for _, s := range p.Sample {
		node := unlabelled
		if v := s.Label["node"]; len(v) > 0 {
			node = v[0]
		}
		out[node] += time.Duration(s.Value[vi])
	}
	return out, nil
}

// scaleCurve runs every case and prints the table.
func scaleCurve(w io.Writer, cases []scaleCase, window, limit time.Duration) []scaleRow {
	var rows []scaleRow
	for _, c := range cases {
		t0 := time.Now()
		r := runScale(c, window, limit)
		log.Printf("scale %s: done in %v %s", c, time.Since(t0).Round(time.Millisecond), r.err)
		rows = append(rows, r)
	}
	printScale(w, rows, window, limit)
	return rows
}

func printScale(w io.Writer, rows []scaleRow, window, limit time.Duration) {
	mode := "every node in raft"
	if replicaFeed {
		mode = "replica feed: diskless nodes outside raft, fed by the voters"
	}
	fmt.Fprintf(w, "\n### Scale curve (holdfast, in-process, in-memory network; %s)\n\n", mode)
	header := []string{"nodes", "shards", "formed", "all owned", "balanced", "CPU to balance",
		"heap/node", "RSS (process)", "idle CPU: process", "leader", "other nodes", "unattributed",
		"join: moves", "join: time", "death: moves", "death: re-owned", "death: balanced"}
	var cells [][]string
	for _, r := range rows {
		if r.err != "" {
			cells = append(cells, []string{fmt.Sprint(r.c.nodes), shardsCell(r.c), "failed: " + strings.ReplaceAll(r.err, "|", "/")})
			continue
		}
		cells = append(cells, []string{
			fmt.Sprint(r.c.nodes), shardsCell(r.c),
			secs(r.form), secs(r.owned), secs(r.balanced), secs(r.startCPU),
			fmt.Sprintf("%.2f MiB", r.heapPerNode), fmt.Sprintf("%.0f MiB", r.rss),
			pct(r.idleCPU), pct(r.leaderCPU), pct(r.othersCPU), pct(r.unlabelledCPU),
			movesCell(r.joinMoves, r.joinLost), secs(r.join), movesCell(r.dieMoves, r.dieLost), secs(r.dieOwned), secs(r.die),
		})
	}
	table(w, header, cells)
	fmt.Fprintf(w, "\nTimes are from the first node's start (formed: every node ready and seen alive; all owned: no free shard;\n"+
		"balanced: every node within shardown's bounds; on a +load point, whose owners report Zipf loads (s = 1.1) as they\n"+
		"acquire, a round of the leader by load that plans no move). Join and death times include the 1 s join stabilization and\n"+
		"the 3 s session TTL (+ expiry) of DefaultLocalConfig. Idle CPU is percent of one core over a %v window once balanced:\n"+
		"the whole process (getrusage), then split by the pprof label node=<name> that each node's goroutines inherit from\n"+
		"its New (leader, the sum of all other nodes, and goroutines started outside any node: timers, the in-memory network).\n"+
		"CPU to balance is the whole process's CPU time from the first start until balanced. Each wait is bounded by %v.\n", window, limit)
	if bend := bendNote(rows); bend != "" {
		fmt.Fprintf(w, "\n%s\n", bend)
	}
}

// movesCell shows the moves, and the sessions lost meanwhile if any (a node
// whose session expired loses all its shards).
func movesCell(moves, lost int) string {
	if lost == 0 {
		return fmt.Sprint(moves)
	}
	return fmt.Sprintf("%d (%d sessions lost)", moves, lost)
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", x) }

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// bendNote points at the largest per-node growth of idle CPU and of time
// to balance between consecutive points with the same shard count.
func bendNote(rows []scaleRow) string {
	var ok []scaleRow
	for _, r := range rows {
		if r.err == "" {
			ok = append(ok, r)
		}
	}
	var notes []string
	for i := 1; i < len(ok); i++ {
		a, b := ok[i-1], ok[i]
		if a.c.shards != b.c.shards {
			continue
		}
		k := float64(b.c.nodes) / float64(a.c.nodes)
		cpuK := b.idleCPU / a.idleCPU
		balK := b.balanced.Seconds() / a.balanced.Seconds()
		notes = append(notes, fmt.Sprintf("%d→%d nodes (×%.1f): idle CPU ×%.1f, time to balance ×%.1f, leader CPU ×%.1f",
			a.c.nodes, b.c.nodes, k, cpuK, balK, b.leaderCPU/a.leaderCPU))
	}
	if len(notes) == 0 {
		return ""
	}
	return "Growth between points: " + strings.Join(notes, "; ") + "."
}

// shardsCell is the shards column: the count, and "+ load" on a point
// whose owners report load.
func shardsCell(c scaleCase) string {
	if c.load {
		return fmt.Sprintf("%d + load", c.shards)
	}
	return fmt.Sprint(c.shards)
}

// writeHeapProfile writes the live heap once a point is balanced to
// -idle-profile's directory as heap-NODESxSHARDS.pprof (read it with
// go tool pprof -sample_index=inuse_space).
func writeHeapProfile(c scaleCase) {
	if idleProfileDir == "" {
		return
	}
	f, err := os.Create(filepath.Join(idleProfileDir, fmt.Sprintf("heap-%s.pprof", c)))
	if err != nil {
		log.Printf("heap profile: %v", err)
		return
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		log.Printf("heap profile: %v", err)
	}
}
