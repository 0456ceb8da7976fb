package shards

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/shardown"
)

// TestLoadMeterHalfLife: the first report sets the average; a report one
// half-life later moves it half-way; bad reports are ignored; Forget drops
// a shard.
func TestLoadMeterHalfLife(t *testing.T) {
	m := NewLoadMeter(10 * time.Second)
	t0 := time.Unix(1_000_000, 0)
	m.Observe(3, 100, t0)
	m.Observe(3, 200, t0.Add(10*time.Second))
	m.Observe(3, math.NaN(), t0.Add(11*time.Second))
	m.Observe(3, -1, t0.Add(11*time.Second))
	m.Observe(7, 5, t0)
	shards, loads := m.Report()
	if !slices.Equal(shards, []uint32{3, 7}) || loads[0] != 150 || loads[1] != 5 {
		t.Fatalf("report %v %v, want [3 7] [150 5]", shards, loads)
	}
	m.Forget(3)
	if shards, _ := m.Report(); !slices.Equal(shards, []uint32{7}) {
		t.Fatalf("after Forget(3): %v", shards)
	}
	raw := NewLoadMeter(0)
	raw.Observe(1, 10, t0)
	raw.Observe(1, 30, t0.Add(time.Second))
	if _, l := raw.Report(); l[0] != 30 {
		t.Fatalf("no half-life: %v, want the last report", l)
	}
}

// TestLoadMeterReportsInTurns: with more than MaxLoadReports shards a
// report carries MaxLoadReports of them, the next ones on the next report,
// so every shard is sent within a few keepalives.
func TestLoadMeterReportsInTurns(t *testing.T) {
	m := NewLoadMeter(time.Second)
	n := MaxLoadReports + MaxLoadReports/2
	for s := range n {
		m.Observe(uint32(s), 1, time.Unix(0, 0))
	}
	seen := map[uint32]bool{}
	for range 2 {
		shards, loads := m.Report()
		if len(shards) != MaxLoadReports || len(loads) != MaxLoadReports {
			t.Fatalf("report of %d shards, want %d", len(shards), MaxLoadReports)
		}
		for _, s := range shards {
			seen[s] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("two reports covered %d of %d shards", len(seen), n)
	}
}

// TestLoadBookKeepsAShardsLoadAcrossOwners: the book gives a shard's last
// reported load whoever reported it (a new owner's report replaces the
// old owner's, which stands until then), -1 for a shard without a
// report, and ignores bad entries; before any report it gives no loads at
// all (an empty slice: balance by count), keeping no buffer of n floats.
func TestLoadBookKeepsAShardsLoadAcrossOwners(t *testing.T) {
	var b LoadBook
	if got := b.Loads(100_000, make([]float64, 0, 8)); len(got) != 0 || cap(got) != 8 {
		t.Fatalf("loads before any report: len %d cap %d, want an empty slice in the buffer given", len(got), cap(got))
	}
	b.Record("a", []uint32{0, 1, 2, fsm.MaxShards}, []float32{10, 20, float32(math.Inf(1)), 5})
	if got := b.Loads(4, nil); !slices.Equal(got, []float64{10, 20, -1, -1}) {
		t.Fatalf("loads %v, want [10 20 -1 -1]", got)
	}
	b.Record("b", []uint32{1}, []float32{99}) // shard 1 moved to b, which reports
	if got := b.Loads(4, nil); !slices.Equal(got, []float64{10, 99, -1, -1}) {
		t.Fatalf("loads %v, want [10 99 -1 -1] (shard 1 as its new owner b reported)", got)
	}
}

// TestBalancerPlansByLoad: with loads, the balancer moves shards off the
// member that carries the hot ones, publishes a report by load and counts
// the moves by reason; without them it balances by count.
func TestBalancerPlansByLoad(t *testing.T) {
	load := make([]float64, 16)
	for s := range load {
		load[s] = 1
		if s < 4 {
			load[s] = 10 // a's first four shards are hot
		}
	}
	var rep *PlanReport
	rig := newBalancerRig(t, 16, BalancerOptions{MaxMoves: 16,
		Loads:  func(_ *fsm.View, dst []float64) []float64 { return append(dst[:0], load...) },
		Report: func(r *PlanReport) { rep = r }})
	rig.session("a", ttl, false)
	rig.session("b", ttl, false)
	rig.grant("a", 0, 1, 2, 3, 4, 5, 6, 7)
	rig.grant("b", 8, 9, 10, 11, 12, 13, 14, 15)
	rig.start()
	rig.round(0, true)
	rev := revokingShards(rig.view())
	if len(rev) == 0 || rep == nil || !rep.ByLoad || len(rep.Moves) != len(rev) {
		t.Fatalf("after a round: %s, report %+v; want a's shards revoking by load", describe(rig.view()), rep)
	}
	for _, m := range rep.Moves {
		if m.Reason != shardown.ReasonLoad {
			t.Fatalf("move %+v, want a load move", m)
		}
	}
	if got := testutil.ToFloat64(rig.o.Metrics.balance.moves.WithLabelValues(shardown.ReasonLoad)); got != float64(len(rev)) {
		t.Fatalf("moves_total{reason=load} = %v, want %d", got, len(rev))
	}
	// a holds 4×10+4×1 = 44, b 8: each should carry 26; after the moves
	// both are within the goal band 26 × (1 ± 0.05).
	for _, m := range rep.Members {
		if m.Target != 26 || math.Abs(m.PlannedLoad-26) > 1.3 {
			t.Fatalf("member %+v; want target 26 and a planned load within 5%%", m)
		}
	}
	if a := rep.Members[0]; a.ID != "a" || a.Load != 44 {
		t.Fatalf("a's line %+v; want load 44", a)
	}
}
