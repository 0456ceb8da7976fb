package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// The targets of issue 31 (and issue 16's rows that still hold), judged
// from this run: every row with its target, what this run measured, and
// "met", "not met", or "not measured" with the reason (a workload, point or
// peer this run left out: -quick has no leader rows and no 64-node or
// 100,000-shard points; a peer that is not installed has no figures).

// verdicts a target row can have.
const (
	met         = "met"
	notMet      = "not met"
	notMeasured = "not measured"
)

// targetRow is one row of the table.
type targetRow struct{ workload, target, result, verdict string }

// targetRun is what the judgement reads: the side by side report, the
// scale curve, and the run's options.
type targetRun struct {
	rep   *report
	scale []scaleRow
	o     *options
	quick bool
}

// printTargets writes the target table for this run.
func printTargets(w io.Writer, t targetRun) {
	const acq, cont, hand, fail = "1. acquire+release, 1 client", "2. acquire+release, 8 clients", "4. graceful handoff", "3. failover after kill, TTL 2 s"
	rows := []targetRow{
		t.peerRow("acquire + release, 1 client, 1 replica", "≥ 2× every peer (throughput)", []int{1}, acq, "throughput", 2, true),
		t.peerRow("acquire + release, 1 client, 3 replicas, client on a follower", "≥ 1.2× every peer (throughput)", []int{3}, acq, "throughput", 1.2, true),
		t.leaderRow(),
		t.peerRow("8 contending clients", "≥ 5× every peer (throughput)", []int{1, 3}, cont, "throughput", 5, true),
		t.peerRow("graceful handoff (waiter on a follower at 3)", "p50 ≤ every peer's", []int{1, 3}, hand, "resign → next holder p50", 1, false),
		t.failoverRow(fail),
		t.memoryRow(),
		t.ownerRow(),
		t.formRow(256),
		t.idle256Row(),
		t.sessionsRow(),
		t.heap100kRow(),
		t.ownedRow(),
		t.joinRow(),
		t.deathRow(),
		t.idleRow(),
	}
	fmt.Fprintf(w, "\n### Targets of issue 31 (and issue 16's scale rows)\n\n")
	fmt.Fprintf(w, "holdfast's release in the acquire and handoff rows: Release, which %s.\n\n", releaseModes[0].what)
	fmt.Fprintln(w, "| workload | target | this run | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.workload, r.target, r.result, r.verdict)
	}
}

// failoverRow judges the failover medians, and says how settled each
// comparison is (resampledNote).
func (t targetRun) failoverRow(title string) targetRow {
	counts := []int{1, 3}
	r := t.peerRow("failover after a kill, TTL 2 s", "≤ every peer's (median)", counts, title, "kill → next holder", 1, false)
	r.verdict += t.resampledNote(counts, title, "kill → next holder")
	return r
}

// metricAt returns the metric of workload and name measured at replicas
// with holdfast figures, or nil.
func (t targetRun) metricAt(replicas int, workload, name string) *metric {
	for _, s := range t.rep.sections {
		if s.replicas != replicas {
			continue
		}
		for _, m := range s.metrics {
			if m.workload == workload && m.name == name && len(m.of(hfName)) > 0 {
				return m
			}
		}
	}
	return nil
}

// peerRow judges holdfast/peer of one metric against goal for every peer
// of the run at each replica count: at least goal when higher is better,
// at most goal otherwise. Met only when it is met against every peer at
// every count.
func (t targetRun) peerRow(workload, target string, counts []int, title, name string, goal float64, higher bool) targetRow {
	return t.peerRowOf(t.o.peers, workload, target, counts, title, name, goal, higher)
}

// peerRowOf is peerRow against the given peers only.
func (t targetRun) peerRowOf(peers []*peerKind, workload, target string, counts []int, title, name string, goal float64, higher bool) targetRow {
	var res, missing []string
	v := met
	for _, r := range counts {
		m := t.metricAt(r, title, name)
		if m == nil {
			missing = append(missing, fmt.Sprintf("%d replica(s) not in this run (-only, -replicas)", r))
			continue
		}
		var parts []string
		for _, k := range peers {
			if len(m.of(k.name)) == 0 {
				missing = append(missing, fmt.Sprintf("%s at %d replica(s)%s", k.name, r, why(k)))
				continue
			}
			ok, s := judgeRatio(m, k.name, goal, higher)
			parts = append(parts, s)
			if !ok {
				v = notMet
			}
		}
		res = append(res, fmt.Sprintf("%d replica(s): %s %s; %s", r, hfName,
			fmtValue(median(m.of(hfName)), m.unit, len(m.of(hfName))), strings.Join(parts, "; ")))
	}
	if len(res) == 0 {
		return targetRow{workload, target, "–", notMeasured + ": " + strings.Join(missing, ", ")}
	}
	if len(missing) > 0 && v == met {
		v = fmt.Sprintf("%s where measured; not measured: %s", met, strings.Join(missing, "; "))
	}
	return targetRow{workload, target, strings.Join(res, " / "), v}
}

// why is a peer's reason to be missing from the run, if it has one.
func why(k *peerKind) string {
	if err := k.available(); err != nil {
		return ": " + err.Error()
	}
	return ""
}

// judgeRatio compares m's holdfast/peer ratio with goal and describes it.
func judgeRatio(m *metric, peer string, goal float64, higher bool) (bool, string) {
	r := m.ratio(peer)
	ok := r >= goal
	if !higher {
		ok = r <= goal
	}
	return ok && !math.IsNaN(r), fmt.Sprintf("%s %s: %.2f×", peer, fmtValue(median(m.of(peer)), m.unit, len(m.of(peer))), r)
}

func verdict(ok bool) string {
	if ok {
		return met
	}
	return notMet
}

func (t targetRun) leaderRow() targetRow {
	const workload, target = "the same, client on the leader", "≥ 1.5× every peer (throughput; issue 16)"
	if !t.o.leaderRows {
		return targetRow{workload, target, "–", notMeasured + ": leader rows are off (-quick leaves them out; -leader-rows on)"}
	}
	return t.peerRow(workload, target, []int{3}, "1L. as 1, holdfast client on the raft leader", "throughput", 1.5, true)
}

func (t targetRun) memoryRow() targetRow {
	const title = "6. memory per node, 10,000 shards + 100 leases"
	rss := t.peerRow("memory per node, 10,000 shards + 100 leases: RSS", "", t.o.replicas, title, "RSS (VmRSS)", 1, false)
	var goPeers []*peerKind
	for _, k := range t.o.peers {
		if !k.jvm {
			goPeers = append(goPeers, k)
		}
	}
	heap := t.peerRowOf(goPeers, "", "", t.o.replicas, title, "Go heap live after GC", 1, false)
	return targetRow{"memory per node, 10,000 shards + 100 leases", "RSS ≤ every peer's; live heap ≤ every Go peer's (a JVM's heap is not measured)",
		"RSS: " + rss.result + "; live heap: " + heap.result, worse(rss.verdict, heap.verdict)}
}

// worse returns the weaker of two verdicts: not met, then not measured,
// then met with a part not measured, then met.
func worse(a, b string) string {
	rank := func(v string) int {
		switch {
		case v == notMet:
			return 3
		case strings.HasPrefix(v, notMeasured):
			return 2
		case v != met:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// ownerRow judges the lookup row's Owner time (the library's own
// BenchmarkOwner is a go test: see docs/BENCHMARKS.md).
func (t targetRun) ownerRow() targetRow {
	const workload, target = "Owner, the lookup row's holdfast figure", "< 20 ns"
	var res []string
	v := met
	for _, r := range t.o.replicas {
		m := t.metricAt(r, "5. ownership lookup", "Owner vs a read that sees every commit")
		if m == nil {
			continue
		}
		ns := median(m.of(hfName))
		res = append(res, fmt.Sprintf("%d replica(s): %.1f ns", r, ns))
		if !(ns < 20) {
			v = notMet
		}
	}
	if len(res) == 0 {
		return targetRow{workload, target, "–", notMeasured + ": not in this run (-only lookup)"}
	}
	return targetRow{workload, target, strings.Join(res, "; "), v}
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
