package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/coordinator"
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
	printUnplaceable(w, p.Unplaceable, "shards no node may own under the placement rules (unowned until a node with the tags joins or the rule changes)")
	printUnplaceable(w, p.UnplaceableWaiting, "shards only a node not eligible yet may own under the placement rules (it takes them once it is)")
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

// printRules prints the placement rules after the shard table and pins.
func printRules(w io.Writer, rules []admin.RuleRow) {
	for _, r := range rules {
		fmt.Fprintf(w, "rule %s: shards %d-%d only on nodes tagged %s\n", r.Name, r.First, r.Last, strings.Join(r.Require, ","))
	}
}

// printUnplaceable prints a line naming shards (as ranges), if any.
func printUnplaceable(w io.Writer, shards []coordinator.ShardID, what string) {
	if len(shards) == 0 {
		return
	}
	var parts []string
	for i := 0; i < len(shards); {
		j := i
		for j+1 < len(shards) && shards[j+1] == shards[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(shards[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", shards[i], shards[j]))
		}
		i = j + 1
	}
	fmt.Fprintf(w, "%d %s: %s\n", len(shards), what, strings.Join(parts, ", "))
}
