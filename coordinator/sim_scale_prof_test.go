package coordinator_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The measuring tools of TestSimulatedScale (sim_scale_test.go): a CPU
// profiler driven from outside the bubble, the profile split by the pprof
// label node=<name> each node's goroutines inherit from its start, the
// process's CPU time and RSS, and a logger that counts warnings.

// scaleProfiler runs runtime/pprof's CPU profiler (100 Hz: a rate set
// above it with runtime.SetCPUProfileRate was measured to lose most of the
// samples against getrusage) for a bubble. It cannot
// run in the bubble: StartCPUProfile starts a goroutine that waits in the
// runtime, never durably blocked, so the bubble's clock would never move
// while it ran. Its goroutine is started outside the bubble, and the
// bubble talks to it over channels made outside (not durably blocking: the
// bubble's time stands still while it waits for an answer, which is what
// the window's edges want).
type scaleProfiler struct {
	req  chan bool // true: start; false: stop and answer with the profile
	resp chan scaleProfile
	done chan struct{}
}

// scaleProfile is one window's profile: CPU by node label, or an error.
type scaleProfile struct {
	byNode map[string]time.Duration
	err    error
}

// scaleUnlabelled is the label of the goroutines no node started: the
// in-memory network, timers, the garbage collector's workers.
const scaleUnlabelled = "(unlabelled)"

// newScaleProfiler starts the profiler's goroutine; call close to join it.
func newScaleProfiler() *scaleProfiler {
	p := &scaleProfiler{req: make(chan bool), resp: make(chan scaleProfile), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *scaleProfiler) run() {
	defer close(p.done)
	var buf bytes.Buffer
	for start := range p.req {
		if start {
			buf.Reset()
			p.resp <- scaleProfile{err: pprof.StartCPUProfile(&buf)}
			continue
		}
		pprof.StopCPUProfile()
		byNode, err := cpuByNode(&buf)
		p.resp <- scaleProfile{byNode: byNode, err: err}
	}
}

// start begins a window; it returns once the profiler runs.
func (p *scaleProfiler) start() error {
	p.req <- true
	return (<-p.resp).err
}

// stop ends the window and returns its CPU by node.
func (p *scaleProfiler) stop() scaleProfile {
	p.req <- false
	return <-p.resp
}

// close ends the profiler's goroutine and waits for it.
func (p *scaleProfiler) close() {
	close(p.req)
	<-p.done
}

// startLabelled runs start under the pprof label node=name, which every
// goroutine it starts (and theirs) inherits.
func startLabelled(name string, start func()) {
	pprof.Do(context.Background(), pprof.Labels("node", name), func(context.Context) { start() })
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processRSS is the process's resident set in MiB (0 where /proc has no
// status).
func processRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

// warnCounter is a slog handler that drops every record but counts those
// at Warn and above, keeping the first few: hundreds of nodes' logs would
// drown the test's output, and a warning is still worth a look.
type warnCounter struct {
	n     atomic.Int64
	mu    sync.Mutex
	first []string
	node  string // set on a node's copy by WithAttrs
	root  *warnCounter
}

func newWarnCounter() *warnCounter {
	w := &warnCounter{}
	w.root = w
	return w
}

// forNode returns a logger for one node that counts into w.
func (w *warnCounter) forNode(name string) *slog.Logger {
	return slog.New(&warnCounter{root: w.root, node: name})
}

func (w *warnCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (w *warnCounter) Handle(_ context.Context, r slog.Record) error {
	w.root.n.Add(1)
	w.root.mu.Lock()
	defer w.root.mu.Unlock()
	if len(w.root.first) < 5 {
		w.root.first = append(w.root.first, fmt.Sprintf("%s %s: %s", w.node, r.Level, r.Message))
	}
	return nil
}

func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCounter) WithGroup(string) slog.Handler      { return w }

// summary is the count and the first warnings.
func (w *warnCounter) summary() string {
	w.root.mu.Lock()
	defer w.root.mu.Unlock()
	if w.root.n.Load() == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (first: %s)", w.root.n.Load(), strings.Join(w.root.first, "; "))
}
