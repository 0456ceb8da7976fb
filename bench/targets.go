package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// The targets of issue 16, judged from this run: every row of the issue's
// table, with its target, what this run measured, and "met", "not met", or
// "not measured" with the reason (a workload or point this run left out:
// -quick has no leader rows and no 64-node or 100,000-shard points).

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

// printTargets writes issue 16's target table for this run.
func printTargets(w io.Writer, t targetRun) {
	rows := []targetRow{
		t.ratioRow("acquire + release, 1 client, 1 replica", "≥ 1.5× etcd (throughput)",
			1, "1. acquire+release, 1 client", "throughput", 1.5, true),
		t.ratioRow("acquire + release, 1 client, 3 replicas, client on a follower", "≥ 1.0× etcd (throughput)",
			3, "1. acquire+release, 1 client", "throughput", 1.0, true),
		t.leaderRow(),
		t.contendedRow(),
		t.ratioRow("graceful handoff, waiter on a follower", "p50 ≤ etcd's (3 replicas)",
			3, "4. graceful handoff", "resign → next holder p50", 1.0, false),
		t.memoryRow(),
		t.heap100kRow(),
		t.ownedRow(),
		t.joinRow(),
		t.deathRow(),
		t.sessionsRow(),
		t.idleRow(),
	}
	fmt.Fprintf(w, "\n### Targets of issue 16\n\n")
	fmt.Fprintln(w, "| workload | target | this run | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.workload, r.target, r.result, r.verdict)
	}
}

// metricAt returns the metric of workload and name measured at replicas,
// or nil.
func (t targetRun) metricAt(replicas int, workload, name string) *metric {
	for _, s := range t.rep.sections {
		if s.replicas != replicas {
			continue
		}
		for _, m := range s.metrics {
			if m.workload == workload && m.name == name && len(m.hf) > 0 && len(m.etcd) > 0 {
				return m
			}
		}
	}
	return nil
}

// ratioRow judges holdfast/etcd of one metric against goal: at least goal
// when higher is better, at most goal otherwise.
func (t targetRun) ratioRow(workload, target string, replicas int, title, name string, goal float64, higher bool) targetRow {
	m := t.metricAt(replicas, title, name)
	if m == nil {
		return targetRow{workload, target, "–", fmt.Sprintf("%s: not in this run (-only, -replicas %d)", notMeasured, replicas)}
	}
	ok, res := judgeRatio(m, goal, higher)
	return targetRow{workload: workload, target: target, result: res, verdict: verdict(ok)}
}

// judgeRatio compares m's ratio with goal and describes it.
func judgeRatio(m *metric, goal float64, higher bool) (bool, string) {
	r := m.ratio()
	ok := r >= goal
	if !higher {
		ok = r <= goal
	}
	return ok && !math.IsNaN(r), fmt.Sprintf("%s against %s: %.2f× etcd",
		fmtValue(median(m.hf), m.unit, len(m.hf)), fmtValue(median(m.etcd), m.unit, len(m.etcd)), r)
}

func verdict(ok bool) string {
	if ok {
		return met
	}
	return notMet
}

func (t targetRun) leaderRow() targetRow {
	const workload, target = "the same, client on the leader", "≥ 1.5× etcd (throughput)"
	if !t.o.leaderRows {
		return targetRow{workload, target, "–", notMeasured + ": leader rows are off (-quick leaves them out; -leader-rows on)"}
	}
	return t.ratioRow(workload, target, 3, "1L. as 1, holdfast client on the raft leader", "throughput", 1.5, true)
}

func (t targetRun) contendedRow() targetRow {
	const workload, target = "8 contending clients", "≥ 10× etcd at 1 replica, ≥ 5× at 3 (throughput)"
	var res []string
	v := met
	for _, c := range []struct {
		replicas int
		goal     float64
	}{{1, 10}, {3, 5}} {
		m := t.metricAt(c.replicas, "2. acquire+release, 8 clients", "throughput")
		if m == nil {
			res = append(res, fmt.Sprintf("%d replica(s): not measured", c.replicas))
			v = notMeasured + ": not in this run (-only contended, -replicas 1,3)"
			continue
		}
		ok, s := judgeRatio(m, c.goal, true)
		res = append(res, fmt.Sprintf("%d replica(s): %s", c.replicas, s))
		if !ok && v == met {
			v = notMet
		}
	}
	return targetRow{workload, target, strings.Join(res, "; "), v}
}

func (t targetRun) memoryRow() targetRow {
	const workload, target = "memory per node, 10,000 shards + 100 leases", "RSS and live heap ≤ etcd's"
	var res []string
	v, found := met, false
	for _, r := range t.o.replicas {
		for _, name := range []string{"RSS (VmRSS)", "Go heap live after GC"} {
			what := "RSS"
			if name != "RSS (VmRSS)" {
				what = "live heap"
			}
			m := t.metricAt(r, "6. memory per node, 10,000 shards + 100 leases", name)
			if m == nil {
				continue
			}
			found = true
			ok, s := judgeRatio(m, 1, false)
			res = append(res, fmt.Sprintf("%d replica(s) %s: %s", r, what, s))
			if !ok {
				v = notMet
			}
		}
	}
	if !found {
		return targetRow{workload, target, "–", notMeasured + ": not in this run (-only memory)"}
	}
	return targetRow{workload, target, strings.Join(res, "; "), v}
}

// points returns the scale rows with shards shards (and nodes nodes, if
// nodes > 0), and why there are none.
func (t targetRun) points(nodes, shards int) ([]scaleRow, string) {
	var out []scaleRow
	for _, r := range t.scale {
		if r.c.shards == shards && (nodes == 0 || r.c.nodes == nodes) {
			out = append(out, r)
		}
	}
	if len(out) > 0 {
		return out, ""
	}
	p := thousands(shards) + "-shard"
	if nodes > 0 {
		p = fmt.Sprintf("%dx%d", nodes, shards)
	}
	why := "no " + p + " point in this run (-only scale, -scale)"
	if t.quick {
		why = "-quick has no " + p + " point (-scale 3x100000,64x100000,64x1024)"
	}
	return nil, notMeasured + ": " + why
}

// scaleRows judges each point with judge (ok, and what it measured); a
// point that did not finish is not met.
func (t targetRun) scaleRows(workload, target string, nodes, shards int, judge func(r scaleRow) (bool, string)) targetRow {
	rows, why := t.points(nodes, shards)
	if rows == nil {
		return targetRow{workload, target, "–", why}
	}
	var res []string
	v := met
	for _, r := range rows {
		if r.err != "" {
			res = append(res, fmt.Sprintf("%dx%d did not finish: %s", r.c.nodes, r.c.shards, strings.ReplaceAll(r.err, "|", "/")))
			v = notMet
			continue
		}
		ok, s := judge(r)
		res = append(res, fmt.Sprintf("%dx%d: %s", r.c.nodes, r.c.shards, s))
		if !ok {
			v = notMet
		}
	}
	return targetRow{workload, target, strings.Join(res, "; "), v}
}

func (t targetRun) heap100kRow() targetRow {
	return t.scaleRows("live heap per replica at 100,000 shards", "≤ 16 MiB", 0, 100_000, func(r scaleRow) (bool, string) {
		return r.heapPerNode <= 16, fmt.Sprintf("%.1f MiB", r.heapPerNode)
	})
}

func (t targetRun) ownedRow() targetRow {
	row := t.scaleRows("100,000 shards, 3 and 64 nodes", "every shard owned ≤ 10 s after formation; balanced ≤ 20 s", 0, 100_000,
		func(r scaleRow) (bool, string) {
			owned, bal := r.owned-r.form, r.balanced-r.form
			return owned <= 10*time.Second && bal <= 20*time.Second, fmt.Sprintf("owned %s, balanced %s after formation", secs(owned), secs(bal))
		})
	// The row names two sizes: met only when both were measured and met.
	for _, n := range []int{3, 64} {
		if rows, _ := t.points(n, 100_000); rows == nil && row.verdict == met {
			row.verdict = fmt.Sprintf("%s (%d nodes not measured)", notMeasured, n)
		}
	}
	return row
}

func (t targetRun) joinRow() targetRow {
	return t.scaleRows("a join at 100,000 shards", "moves ≤ 1.1 × optimal, done ≤ 5 s", 0, 100_000, func(r scaleRow) (bool, string) {
		opt, _ := bounds(r.c.shards, r.c.nodes+1) // the joiner's least share
		return float64(r.joinMoves) <= 1.1*float64(opt) && r.join <= 5*time.Second,
			fmt.Sprintf("%d moves (optimal %d), %s", r.joinMoves, opt, secs(r.join))
	})
}

func (t targetRun) deathRow() targetRow {
	cfg := coordinator.DefaultLocalConfig() // the scale curve's timings
	limit := cfg.Session.TTL + cfg.Session.ExpiryGrace + 2*time.Second
	return t.scaleRows("a node death at 100,000 shards", fmt.Sprintf("its shards re-owned ≤ TTL + grace + 2 s (%s)", secs(limit)), 0, 100_000,
		func(r scaleRow) (bool, string) {
			return r.die <= limit, fmt.Sprintf("%s until balanced again (an upper bound)", secs(r.die))
		})
}

func (t targetRun) sessionsRow() targetRow {
	const workload, target = "every scale run", "0 sessions expired that were not killed"
	if len(t.scale) == 0 {
		return targetRow{workload, target, "–", notMeasured + ": no scale curve in this run (-only scale)"}
	}
	var res []string
	v := met
	for _, r := range t.scale {
		lost := r.joinLost + r.dieLost
		s := fmt.Sprintf("%dx%d: %d", r.c.nodes, r.c.shards, lost)
		if r.err != "" {
			s += " (did not finish)"
		}
		res = append(res, s)
		if lost > 0 {
			v = notMet
		}
	}
	return targetRow{workload, target, strings.Join(res, "; ") + " (sessions lost during the join and the death)", v}
}

func (t targetRun) idleRow() targetRow {
	return t.scaleRows("idle CPU, 64 nodes × 1,024 shards", "leader ≤ 10 % of a core, others ≤ 1 % each", 64, 1024, func(r scaleRow) (bool, string) {
		each := r.othersCPU / float64(r.c.nodes-1)
		return r.leaderCPU <= 10 && each <= 1, fmt.Sprintf("leader %s, others %s each (%s together)", pct(r.leaderCPU), pct(each), pct(r.othersCPU))
	})
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
