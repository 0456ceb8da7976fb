package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// The scale curve's target rows: issue 31's (256 nodes) and issue 16's
// (100,000 shards, 64 nodes idle), judged on the points of this run.

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
	inFull := slices.ContainsFunc(fullScale, func(c scaleCase) bool { return c.shards == shards && (nodes == 0 || c.nodes == nodes) })
	switch {
	case t.quick && inFull:
		why = "-quick has no " + p + " point (the full run has it: -scale 3x100000,64x100000,64x1024)"
	case nodes > 0 && !inFull:
		why = fmt.Sprintf("no %s point in this run (not in the default curve: -only scale -scale 64x1024,%s)", p, p)
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
			res = append(res, fmt.Sprintf("%s did not finish: %s", r.c, strings.ReplaceAll(r.err, "|", "/")))
			v = notMet
			continue
		}
		ok, s := judge(r)
		res = append(res, fmt.Sprintf("%s: %s", r.c, s))
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
	return t.scaleRows("a join at 100,000 shards", "moves ≤ 1.1 × optimal (by count: without load reports), done ≤ 5 s", 0, 100_000, func(r scaleRow) (bool, string) {
		if r.c.load {
			return r.join <= 5*time.Second, fmt.Sprintf("%d moves by load, %s", r.joinMoves, secs(r.join))
		}
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
			return r.dieOwned <= limit, fmt.Sprintf("re-owned in %s (balanced again in %s)", secs(r.dieOwned), secs(r.die))
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
		s := fmt.Sprintf("%s: %d", r.c, lost)
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

// formRow: at n nodes × 1,024 shards, formed and every shard owned ≤ 30 s.
func (t targetRun) formRow(n int) targetRow {
	return t.scaleRows(fmt.Sprintf("%d nodes × 1,024 shards, one process", n), "formed and every shard owned ≤ 30 s", n, 1024,
		func(r scaleRow) (bool, string) {
			return r.form <= 30*time.Second && r.owned <= 30*time.Second, fmt.Sprintf("formed %s, all owned %s", secs(r.form), secs(r.owned))
		})
}

// idle256Row: the leader's idle CPU at 256 nodes ≤ 10 % of a core, grown
// at most linearly with the node count from 64 nodes.
func (t targetRun) idle256Row() targetRow {
	const workload, target = "idle leader, 256 nodes × 1,024 shards", "≤ 10 % of a core, and leader(256)/leader(64) ≤ 256/64"
	at64, _ := t.points(64, 1024)
	return t.scaleRows(workload, target, 256, 1024, func(r scaleRow) (bool, string) {
		s := fmt.Sprintf("leader %s", pct(r.leaderCPU))
		if len(at64) == 0 || at64[0].err != "" {
			return false, s + "; no 64-node point to compare with (-scale 64x1024,256x1024)"
		}
		g := r.leaderCPU / at64[0].leaderCPU
		return r.leaderCPU <= 10 && g <= 4, fmt.Sprintf("%s, ×%.1f the 64-node leader's (%s)", s, g, pct(at64[0].leaderCPU))
	})
}
