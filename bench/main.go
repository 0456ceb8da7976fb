package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

// workloads names the -only values.
var workloads = []string{"acquire", "contended", "failover", "handoff", "lookup", "memory", "scale", "placement"}

// options are the run's sizes.
type options struct {
	only      map[string]bool
	peers     []*peerKind // the systems compared with holdfast
	replicas  []int
	rounds    int           // A/B rounds per system (acquire, contended, handoff, lookup)
	duration  time.Duration // one acquire+release round
	warmup    time.Duration
	failovers int // failover rounds (one kill per system each)
	handoffs  int // handoffs per round
	lookupDur time.Duration
	window    time.Duration // scale curve: idle CPU profile
	limit     time.Duration // scale curve: bound on each wait
	scale     []scaleCase
	// leaderRows adds, at replicas > 1, workloads 1 and 4 again with
	// holdfast's single client and waiter on the raft leader.
	leaderRows bool
}

func (o *options) selected(w string) bool { return o.only[w] }

// profiling is set while -cpuprofile records the whole run.
var profiling bool

// idleProfileDir, when set by -idle-profile, receives each scale point's
// idle-window CPU profile as idle-NODESxSHARDS.pprof.
var idleProfileDir string

// replicaFeed, -replica-feed, is the scale curve's Config.Cluster.ReplicaFeed:
// true (the default, as in the library) feeds the diskless nodes outside
// raft from the voters; -replica-feed=false puts every node in raft.
var replicaFeed = true

// main parses the flags and runs, by them, one child process (-child), the
// rolling-restart workload alone (-rolling) or the comparison and scale
// curve, under a CPU profile with -cpuprofile. Bad flags exit with status
// 2, a failed run with status 1.
func main() {
	log.SetFlags(log.Ltime)
	log.SetPrefix("bench: ")
	f := defineFlags()
	flag.Parse()
	if f.ca.kind != "" {
		if err := runChild(f.ca); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		return
	}
	if *f.rolling != "" {
		runRollingOnly(f)
		return
	}
	o, err := f.options()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		flag.Usage()
		os.Exit(2)
	}
	idleProfileDir = *f.idleProf
	if *f.cpuprof != "" {
		stop := startCPUProfile(*f.cpuprof)
		defer stop()
	}
	if err := run(os.Stdout, o, *f.quick); err != nil {
		log.Fatal(err)
	}
}

// cliFlags are main's command-line flags (-replica-feed sets replicaFeed
// directly; the -child flags fill ca).
type cliFlags struct {
	quick        *bool
	only         *string
	replicas     *string
	peers        *string
	rounds       *int
	scale        *string
	limit        *time.Duration
	cpuprof      *string
	idleProf     *string
	rolling      *string
	rollShards   *int
	rollWarmup   *time.Duration
	rollModes    *string
	rollInterval *time.Duration
	leader       *string
	failovers    *int
	ca           childArgs
}

// defineFlags defines the command-line flags on the default FlagSet and
// returns where their values go once flag.Parse has run.
func defineFlags() *cliFlags {
	f := &cliFlags{
		quick:        flag.Bool("quick", false, "a reduced run: fewer, shorter rounds and a shorter scale curve (under 3 minutes on 2 cores)"),
		only:         flag.String("only", strings.Join(workloads, ","), "comma-separated workloads to run: "+strings.Join(workloads, ", ")),
		replicas:     flag.String("replicas", "1,3", "replica counts to compare (etcd members = ZooKeeper servers = holdfast voters)"),
		peers:        flag.String("peers", strings.Join(peerFlags(), ","), "comma-separated systems to compare holdfast with: "+strings.Join(peerFlags(), ", ")),
		rounds:       flag.Int("rounds", 0, "A/B rounds per system (0: 3 with -quick, else 5)"),
		scale:        flag.String("scale", "", "scale curve points as NODESxSHARDS[+load],... (+load: the owners report Zipf shard loads; default: 3x1024,9x1024,27x1024 with -quick, else also 64x1024,128x1024,192x1024,256x1024,3x100000,64x100000)"),
		limit:        flag.Duration("scale-limit", 90*time.Second, "scale curve: the longest each wait (forming, ownership, balance, join, death) may take"),
		cpuprof:      flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (the scale curve then does not split idle CPU by node)"),
		idleProf:     flag.String("idle-profile", "", "write each scale point's idle-window CPU profile to this directory as idle-NODESxSHARDS.pprof (read one node with: go tool pprof -tagfocus node=NAME)"),
		rolling:      flag.String("rolling", "", "run only the rolling-restart workload at these node counts (comma-separated, e.g. 3,9), with and without prepare"),
		rollShards:   flag.Int("rolling-shards", 256, "rolling restart: shard count"),
		rollWarmup:   flag.Duration("rolling-warmup", 200*time.Millisecond, "rolling restart: a shard's warm-up before its first write"),
		rollModes:    flag.String("rolling-prepare", "both", "rolling restart: rows without and with prepare (both), or only one (off, on)"),
		rollInterval: flag.Duration("rolling-interval", 10*time.Millisecond, "rolling restart: time between writes to each owned shard"),
		failovers:    flag.Int("failovers", 0, "kills per system in the failover workload (0: 5 with -quick, else 15); more kills give a steadier median"),
		leader:       flag.String("leader-rows", "auto", "at replicas > 1, repeat workloads 1 and 4 with holdfast's client and waiter on the raft leader: on, off, auto (on unless -quick)"),
	}
	flag.BoolVar(&replicaFeed, "replica-feed", true, "scale curve: diskless nodes stay out of raft and are fed by the voters (Config.Cluster.ReplicaFeed, on by default); =false puts every node in raft")
	flag.StringVar(&f.ca.kind, "child", "", "internal: run as a child process of workload 6 (holdfast, etcd, idle)")
	flag.IntVar(&f.ca.index, "child-index", 0, "internal")
	flag.IntVar(&f.ca.n, "child-n", 1, "internal")
	flag.StringVar(&f.ca.dir, "child-dir", "", "internal")
	flag.StringVar(&f.ca.join, "child-join", "", "internal")
	flag.StringVar(&f.ca.ports, "child-ports", "", "internal")
	flag.StringVar(&f.ca.opts, "child-opts", "", "internal")
	return f
}

// runRollingOnly runs the rolling-restart workload at the -rolling node
// counts, printing to standard output; a bad -rolling exits with status 2,
// a failed run with status 1.
func runRollingOnly(f *cliFlags) {
	counts, err := splitInts(*f.rolling)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad -rolling:", err)
		os.Exit(2)
	}
	ro := rollOptions{shards: *f.rollShards, warmup: *f.rollWarmup, interval: *f.rollInterval}
	if err := rollingWorkload(os.Stdout, counts, ro, *f.rollModes); err != nil {
		log.Fatal(err)
	}
}

// options builds the run's options from the flags: the sizes
// (buildOptions), -scale-limit, -peers and -leader-rows (auto: on unless
// -quick). It returns the first error among them.
func (f *cliFlags) options() (*options, error) {
	o, err := buildOptions(*f.quick, *f.only, *f.replicas, *f.rounds, *f.scale)
	if err == nil && *f.failovers < 0 {
		err = fmt.Errorf("bad -failovers %d: want 0 or more", *f.failovers)
	}
	if err == nil {
		o.limit = *f.limit
		o.peers, err = parsePeers(*f.peers)
		if *f.failovers > 0 {
			o.failovers = *f.failovers
		}
	}
	if err == nil {
		switch *f.leader {
		case "on", "off":
			o.leaderRows = *f.leader == "on"
		case "auto":
			o.leaderRows = !*f.quick
		default:
			err = fmt.Errorf("bad -leader-rows %q: on, off or auto", *f.leader)
		}
	}
	return o, err
}

// startCPUProfile starts the CPU profile of the whole run into the file at
// path and sets profiling; it exits (log.Fatal) when it cannot. The
// returned function stops the profile and closes the file.
func startCPUProfile(path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	profiling = true
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// fullScale is the scale curve of the full run.
var fullScale = []scaleCase{{nodes: 3, shards: 1024}, {nodes: 9, shards: 1024}, {nodes: 27, shards: 1024}, {nodes: 64, shards: 1024}, {nodes: 128, shards: 1024}, {nodes: 192, shards: 1024}, {nodes: 256, shards: 1024}, {nodes: 3, shards: 100_000}, {nodes: 64, shards: 100_000}}

func buildOptions(quick bool, only, replicas string, rounds int, scale string) (*options, error) {
	o := &options{only: map[string]bool{}, rounds: 5, duration: 3 * time.Second, warmup: 500 * time.Millisecond,
		failovers: 15, handoffs: 25, lookupDur: 1 * time.Second, window: 5 * time.Second,
		scale: fullScale}
	if quick {
		o.rounds, o.duration, o.warmup, o.failovers, o.handoffs, o.lookupDur, o.window =
			3, time.Second, 300*time.Millisecond, 5, 8, 250*time.Millisecond, 2*time.Second
		o.scale = []scaleCase{{nodes: 3, shards: 1024}, {nodes: 9, shards: 1024}, {nodes: 27, shards: 1024}}
	}
	if rounds > 0 {
		o.rounds = rounds
	}
	for _, w := range strings.Split(only, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		if !slices.Contains(workloads, w) {
			return nil, fmt.Errorf("unknown workload %q", w)
		}
		o.only[w] = true
	}
	for _, r := range strings.Split(replicas, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || (n != 1 && n != 3 && n != 5) {
			return nil, fmt.Errorf("bad -replicas %q: 1, 3 or 5", r)
		}
		o.replicas = append(o.replicas, n)
	}
	if scale != "" {
		o.scale = nil
		for _, p := range strings.Split(scale, ",") {
			var c scaleCase
			p = strings.TrimSpace(p)
			p, c.load = strings.CutSuffix(p, "+load")
			if _, err := fmt.Sscanf(p, "%dx%d", &c.nodes, &c.shards); err != nil || c.nodes < 3 || c.shards < 1 {
				return nil, fmt.Errorf("bad -scale point %q: NODESxSHARDS[+load] with at least 3 nodes", p)
			}
			o.scale = append(o.scale, c)
		}
	}
	return o, nil
}

func run(w io.Writer, o *options, quick bool) error {
	start := time.Now()
	mode := "full"
	if quick {
		mode = "quick"
	}
	vs := "holdfast vs " + strings.Join(peerNames(o.peers), " and ")
	if len(o.peers) == 0 {
		vs = "holdfast alone (-peers is empty)"
	}
	fmt.Fprintf(w, "## %s (%s run)\n\n%s\n", vs, mode, machine())
	fmt.Fprintf(w, "A/B rounds per system: %d (acquire rounds of %v, %d handoffs per round, %d failover kills per system); values are medians of rounds.\n",
		o.rounds, o.duration, o.handoffs, o.failovers)
	rep := &report{}
	comparing := o.selected("acquire") || o.selected("contended") || o.selected("failover") ||
		o.selected("handoff") || o.selected("lookup") || o.selected("memory")
	if comparing {
		for _, r := range o.replicas {
			sec := rep.section(sectionTitle(o.peers, r), peerNames(o.peers))
			sec.replicas = r
			notePeers(o.peers, sec)
			if o.selected("acquire") || o.selected("contended") || o.selected("failover") ||
				o.selected("handoff") || o.selected("lookup") {
				if err := runCompare(o, r, sec); err != nil {
					return fmt.Errorf("r=%d: %w", r, err)
				}
			}
			if o.selected("memory") {
				if err := memoryWorkload(o.peers, r, sec); err != nil {
					return fmt.Errorf("memory r=%d: %w", r, err)
				}
			}
			sec.print(w)
		}
		if o.selected("memory") {
			if m, err := memIdle(); err == nil {
				fmt.Fprintf(w, "\nAn idle child of the same binary (the floor under the Go processes' figures): RSS %.1f MiB, heap %.1f MiB.\n",
					float64(m.RSSKiB)/1024, float64(m.HeapLive)/(1<<20))
			}
		}
	}
	if o.selected("placement") {
		if err := placementWorkload(w); err != nil {
			return fmt.Errorf("placement: %w", err)
		}
	}
	var scale []scaleRow
	if o.selected("scale") {
		scale = scaleCurve(w, o.scale, o.window, o.limit)
	}
	printTargets(w, targetRun{rep: rep, scale: scale, o: o, quick: quick})
	fmt.Fprintf(w, "\nTotal time %v; load average at the end: %s.\n", time.Since(start).Round(time.Second), loadavg())
	return nil
}

// sectionTitle names the systems at replica count r.
func sectionTitle(kinds []*peerKind, r int) string {
	t := fmt.Sprintf("%d replica(s): %d holdfast voter(s)", r, r)
	for _, k := range kinds {
		t += fmt.Sprintf(" vs %d %s", r, k.members)
	}
	return t + ", loopback TCP, fsync on"
}

// machine describes the host the run is on.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		if len(f) >= 2 {
			kib, _ := strconv.ParseFloat(f[1], 64)
			mem = fmt.Sprintf(", %.0f GiB", kib/(1<<20))
		}
	}
	return fmt.Sprintf("Machine: %s, %d cores%s, %s %s/%s; load average at start: %s.\n",
		cpu, runtime.NumCPU(), mem, runtime.Version(), runtime.GOOS, runtime.GOARCH, loadavg())
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
