package main

import (
	"fmt"

	"github.com/holdfast-go/holdfast/coordinator"
)

// progress describes the leader's table: owned and free shards.
func (h *hfCluster) progress() string {
	t, err := h.leaderTable()
	if err != nil {
		return err.Error()
	}
	owned := 0
	for s := 0; s < t.Len(); s++ {
		if _, ok := t.Owner(coordinator.ShardID(s)); ok {
			owned++
		}
	}
	out := fmt.Sprintf("%d of %d shards owned", owned, t.Len())
	if h.opts.byLoad {
		out += "; " + h.placementNote()
	}
	return out
}

// placementNote sums up the leader's latest round: by load or count, its
// moves by reason, and the spread of load over target.
func (h *hfCluster) placementNote() string {
	l, err := h.leader()
	if err != nil {
		return err.Error()
	}
	p, ok := l.c.Placement()
	if !ok {
		return "no round yet"
	}
	reasons := map[string]int{}
	for _, m := range p.Moves {
		reasons[m.Reason]++
	}
	lo, hi, eligible := 0.0, 0.0, 0
	for i, n := range p.Nodes {
		if n.Eligible {
			eligible++
		}
		if n.Target <= 0 {
			continue
		}
		r := n.Load / n.Target
		if i == 0 || r < lo {
			lo = r
		}
		hi = max(hi, r)
	}
	note := fmt.Sprintf("latest round by load %v: moves %v, load/target %.3f to %.3f over %d nodes (%d eligible)", p.ByLoad, reasons, lo, hi, len(p.Nodes), eligible)
	if h.loads == nil {
		return note
	}
	t, err := h.leaderTable()
	if err != nil {
		return note
	}
	truth, count, revoking := map[string]float64{}, map[string]int{}, map[string]int{}
	for s := 0; s < t.Len(); s++ {
		if o, ok := t.Owner(coordinator.ShardID(s)); ok {
			truth[o.Node.Name] += h.loads[s]
			count[o.Node.Name]++
		}
		if info, _ := t.Shard(coordinator.ShardID(s)); info.State == coordinator.ShardRevoking {
			revoking[info.Owner.Node.Name]++
		}
	}
	note += fmt.Sprintf("; revoking by owner %v; leader %s", revoking, l.name)
	for _, n := range p.Nodes {
		if n.Target > 0 && (n.Load/n.Target == hi || n.Load/n.Target == lo) {
			note += fmt.Sprintf("; %s: planner load %.1f (%d shards), table %.1f (%d shards), target %.1f", n.Node, n.Load, n.Shards, truth[n.Node], count[n.Node], n.Target)
		}
	}
	return note
}

// sessions returns each running node's session ID.
func (h *hfCluster) sessions() map[*hfNode]string {
	out := map[*hfNode]string{}
	for _, n := range h.running() {
		if info, ok := n.c.Session(); ok {
			out[n] = info.ID
		}
	}
	return out
}

// lost counts the nodes of before still running whose session changed.
func (h *hfCluster) lost(before map[*hfNode]string) int {
	after := h.sessions()
	n := 0
	for node, id := range before {
		if node.c != nil && after[node] != id {
			n++
		}
	}
	return n
}

// leaderTable returns the leader's shard table.
func (h *hfCluster) leaderTable() (*coordinator.ShardTable, error) {
	l, err := h.leader()
	if err != nil {
		return nil, err
	}
	return l.c.Table(), nil
}

func (h *hfCluster) ownedByLeader() error {
	l, err := h.leader()
	if err != nil {
		return err
	}
	return allOwned(l.c, h.opts.shards)()
}

// balanced reports nil once the leader's table shows every shard owned by
// a running node, none being handed off, and every running node within
// its bounds.
func (h *hfCluster) balanced() error {
	loads, err := h.ownedByRunning()
	if err != nil {
		return err
	}
	if h.opts.byLoad {
		return h.balancedByLoad()
	}
	lo, hi := bounds(h.opts.shards, len(loads))
	for _, l := range loads {
		if l < lo || l > hi {
			return fmt.Errorf("%w: a node owns %d, bounds [%d, %d]", errNotYet, l, lo, hi)
		}
	}
	return nil
}

// balancedByLoad reports nil once the leader's latest round balanced by
// load over exactly the running nodes, every one of them eligible (a
// joiner past its join stabilization, a dead node's session gone), and
// planned no move.
func (h *hfCluster) balancedByLoad() error {
	l, err := h.leader()
	if err != nil {
		return err
	}
	p, ok := l.c.Placement()
	switch {
	case !ok:
		return fmt.Errorf("%w: the leader has not planned yet", errNotYet)
	case !p.ByLoad:
		return fmt.Errorf("%w: the leader balances by count (no load reports yet)", errNotYet)
	case len(p.Moves) > 0:
		return fmt.Errorf("%w: the leader's latest round started %d moves", errNotYet, len(p.Moves))
	}
	planned := map[string]bool{}
	for _, n := range p.Nodes {
		planned[n.Node] = n.Eligible
	}
	running := h.running()
	for _, n := range running {
		if !planned[n.name] {
			return fmt.Errorf("%w: the leader's latest round did not count %s as eligible", errNotYet, n.name)
		}
	}
	if len(p.Nodes) != len(running) {
		return fmt.Errorf("%w: the leader's latest round planned over %d nodes, %d run", errNotYet, len(p.Nodes), len(running))
	}
	return nil
}

// ownedByRunning returns each running node's shard count once the
// leader's table shows every shard owned by a running node and none being
// handed off.
func (h *hfCluster) ownedByRunning() (map[string]int, error) {
	ids := map[string]bool{}
	for _, n := range h.running() {
		ids[n.id] = true
	}
	t, err := h.leaderTable()
	if err != nil {
		return nil, err
	}
	loads := map[string]int{}
	for id := range ids {
		loads[id] = 0
	}
	for s := 0; s < t.Len(); s++ {
		info, _ := t.Shard(coordinator.ShardID(s))
		if info.State != coordinator.ShardOwned {
			return nil, fmt.Errorf("%w: shard %d %s", errNotYet, s, info.State)
		}
		if !ids[info.Owner.Node.ID] {
			return nil, fmt.Errorf("%w: shard %d owned by a dead node", errNotYet, s)
		}
		loads[info.Owner.Node.ID]++
	}
	if t.Len() == 0 {
		return nil, fmt.Errorf("%w: no table", errNotYet)
	}
	return loads, nil
}

// owners returns the leader's table as shard → owner node ID.
func (h *hfCluster) owners() ([]string, error) {
	t, err := h.leaderTable()
	if err != nil {
		return nil, err
	}
	out := make([]string, t.Len())
	for s := range out {
		o, _ := t.Owner(coordinator.ShardID(s))
		out[s] = o.Node.ID
	}
	return out, nil
}

func moved(before, after []string) int {
	n := 0
	for i := range min(len(before), len(after)) {
		if before[i] != after[i] {
			n++
		}
	}
	return n
}
