package main

import (
	"fmt"
	"io"

	"github.com/holdfast-go/holdfast/admin"
)

// printPlan prints what the raft leader's balancer would do next round:
// one row per node (shards and load now and after the round, the target),
// then one row per move with its reason.
func printPlan(w io.Writer, p *admin.PlanResult) {
	by := "count (no shard reports load)"
	if p.ByLoad {
		by = "reported load"
	}
	fmt.Fprintf(w, "next round of the raft leader %s, balancing by %s: %d moves, %d shards unowned\n", p.Leader, by, len(p.Moves), p.Unowned)
	if p.Waiting != "" {
		fmt.Fprintln(w, p.Waiting)
		return
	}
	fmt.Fprintln(w, "NODE\tCAPACITY\tSHARDS\tAFTER\tLOAD\tAFTER\tTARGET\tLOAD/TARGET\tNOTE")
	for _, n := range p.Nodes {
		note := ""
		switch {
		case n.Stuck:
			note = "one shard alone is above the band"
		case !n.Eligible:
			note = "takes no shards yet (joining or not heard from)"
		}
		ratio := "-"
		if n.Target > 0 {
			ratio = fmt.Sprintf("%.2f", n.PlannedLoad/n.Target)
		}
		fmt.Fprintf(w, "%s\t%g\t%d\t%d\t%.4g\t%.4g\t%.4g\t%s\t%s\n", n.Node, n.Capacity, n.Shards, n.PlannedShards, n.Load, n.PlannedLoad,
			n.Target, ratio, dash(note))
	}
	if len(p.Moves) == 0 {
		return
	}
	node := map[string]string{}
	for _, n := range p.Nodes {
		node[n.Session] = n.Node
	}
	fmt.Fprintln(w, "SHARD\tFROM\tTO\tREASON")
	for _, m := range p.Moves {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", m.Shard, dash(node[m.From]), dash(node[m.To]), m.Reason)
	}
}

// printPins prints the shard pins after the shard table.
func printPins(w io.Writer, pins []admin.PinRow) {
	for _, p := range pins {
		if p.Once {
			fmt.Fprintf(w, "shard %d is being moved to %s\n", p.Shard, p.Node)
		} else {
			fmt.Fprintf(w, "shard %d is pinned to %s\n", p.Shard, p.Node)
		}
	}
}
