package coordinator_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The trace of one TestSimulation seed: every log record of every node
// (at simLogLevel and above) and every event of the harness (faults,
// grants, clock changes), stamped with the bubble's virtual time. Nothing
// is formatted until a seed fails (or the event log is asked for), so a
// passing seed pays only for keeping the records.

// simLogLevel is the lowest level of the nodes' records the trace keeps:
// warnings unless HOLDFAST_SIM_LOG names another level (debug, info), to
// see where two runs of a seed part (HOLDFAST_SIM_EVENTS writes the whole
// trace beside the event log).
var simLogLevel = func() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("HOLDFAST_SIM_LOG"))); err != nil {
		return slog.LevelWarn
	}
	return l
}()

// simTraceWindow is how many simulated seconds before a violation the
// failure message shows, and simTraceLines how many lines at most.
const (
	simTraceWindow = 3 * time.Second
	simTraceLines  = 150
)

// simEntry is one record of the trace.
type simEntry struct {
	at   time.Duration // since the seed's start
	node string        // "" for the harness
	rec  slog.Record   // zero for a harness event
	msg  string        // a harness event
	seq  int
}

// simTrace collects the entries of one seed.
type simTrace struct {
	t0 time.Time

	mu      sync.Mutex
	entries []simEntry
}

func newSimTrace() *simTrace { return &simTrace{t0: time.Now()} }

// event records a harness event.
func (tr *simTrace) event(format string, args ...any) {
	at := time.Since(tr.t0)
	msg := fmt.Sprintf(format, args...)
	tr.mu.Lock()
	tr.entries = append(tr.entries, simEntry{at: at, msg: msg, seq: len(tr.entries)})
	tr.mu.Unlock()
}

// logger returns node's logger, which writes into the trace.
func (tr *simTrace) logger(node string) *slog.Logger {
	return slog.New(&simHandler{tr: tr, node: node})
}

// simHandler is a slog.Handler that keeps records in a simTrace.
type simHandler struct {
	tr    *simTrace
	node  string
	attrs []slog.Attr
}

func (h *simHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= simLogLevel }

func (h *simHandler) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(h.attrs...)
	at := r.Time.Sub(h.tr.t0)
	h.tr.mu.Lock()
	h.tr.entries = append(h.tr.entries, simEntry{at: at, node: h.node, rec: r, seq: len(h.tr.entries)})
	h.tr.mu.Unlock()
	return nil
}

func (h *simHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(slices.Clone(h.attrs), as...)
	return &n
}

func (h *simHandler) WithGroup(string) slog.Handler { return h }

// line formats an entry.
func (e simEntry) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%10.3fs ", e.at.Seconds())
	if e.node == "" {
		b.WriteString("sim ")
		b.WriteString(e.msg)
		return b.String()
	}
	fmt.Fprintf(&b, "%s %s %s", e.node, e.rec.Level, e.rec.Message)
	e.rec.Attrs(func(a slog.Attr) bool {
		if a.Key != "test_node" && a.Key != "node" {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
		return true
	})
	return b.String()
}

// harnessLog is the harness's events in order, one per line: the seed's
// event log, compared run to run by TestSimulationReplay.
func (tr *simTrace) harnessLog() string { return tr.lines(false) }

// lines formats the harness's events, and the nodes' records too if all.
func (tr *simTrace) lines(all bool) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var b strings.Builder
	for _, e := range tr.entries {
		if all || e.node == "" {
			b.WriteString(e.line())
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// tail returns the entries of the window before at (and a little after),
// at most simTraceLines of them, the latest kept.
func (tr *simTrace) tail(at time.Duration) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var lines []string
	for _, e := range tr.entries {
		if e.at >= at-simTraceWindow && e.at <= at+200*time.Millisecond {
			lines = append(lines, e.line())
		}
	}
	skipped := 0
	if len(lines) > simTraceLines {
		skipped = len(lines) - simTraceLines
		lines = lines[skipped:]
	}
	head := fmt.Sprintf("trace of the simulated %v before %.3fs", simTraceWindow, at.Seconds())
	if skipped > 0 {
		head += fmt.Sprintf(" (%d earlier lines left out)", skipped)
	}
	return head + ":\n    " + strings.Join(lines, "\n    ")
}

// simViolationTime is the latest time a violation message names (chaos
// violations give times as milliseconds since the seed's start, "812.5ms");
// false when it names none.
var simMsRE = regexp.MustCompile(`(\d+(?:\.\d+)?)ms`)

func simViolationTime(v string) (time.Duration, bool) {
	var latest time.Duration
	found := false
	for _, m := range simMsRE.FindAllStringSubmatch(v, -1) {
		f, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			continue
		}
		d := time.Duration(f * float64(time.Millisecond))
		if !found || d > latest {
			latest, found = d, true
		}
	}
	return latest, found
}
