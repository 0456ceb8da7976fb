package coordinator_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// Lease requests that end uncleanly, in TestChaos: workers bound their
// calls by short deadlines or cancel them midway, call TryAcquire as well
// as Acquire, and release with expired contexts; nodes send some forwarded
// lease commands twice (the copy late, sometimes past the RPC timeout); the
// "slow-forwards" fault delays one node's traffic to the leader past the
// RPC timeout, so its requests reach the leader after it gave up. After
// every seed two more invariants are checked:
//
//   - no orphans: once the workers have stopped (every call returned, every
//     lease released), no name is held or queued by anyone within one TTL
//     (plus the expiry grace a leader change adds) of the faults stopping
//     and the workers stopping, whichever is later;
//   - no blocked Acquire: after the faults stop, no Acquire stays blocked
//     for more than chaosBlockedLimit while its own node's session holds the
//     name and no Lease of that node does (a release in flight takes one
//     round trip);
//   - no orphan while the workers run: after the faults stop, no name stays
//     held or queued for more than one TTL by a node's current session
//     while that node has no live Lease and no call in flight for it.

// chaosDupRatio is the share of forwarded commands sent twice.
const chaosDupRatio = 0.1

// chaosBlockedLimit is how long, once the faults stopped, an Acquire may
// stay blocked while its own session holds the name (a release of the
// node's earlier request is then in flight: one round trip).
const chaosBlockedLimit = time.Second

// chaosKey names one node's interest in one lease name.
type chaosKey struct {
	node int
	name string
}

// chaosCall is one Acquire or TryAcquire in flight.
type chaosCall struct {
	wait      bool
	start     time.Time
	heldSince time.Time // since when the node's own session holds the name (monitor only)
	reported  bool
}

// chaosRequests follows the calls in flight and the live leases per node
// and name.
type chaosRequests struct {
	mu         sync.Mutex
	pending    map[chaosKey]map[*chaosCall]bool
	live       map[chaosKey]int
	calls      map[string]int // call kinds made, for the summary
	violations []string
}

func newChaosRequests() *chaosRequests {
	return &chaosRequests{pending: map[chaosKey]map[*chaosCall]bool{}, live: map[chaosKey]int{}, calls: map[string]int{}}
}

// begin records a call in flight; the returned func ends it.
func (q *chaosRequests) begin(node int, name, kind string, wait bool) func() {
	k := chaosKey{node, name}
	call := &chaosCall{wait: wait, start: time.Now()}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls[kind]++
	if q.pending[k] == nil {
		q.pending[k] = map[*chaosCall]bool{}
	}
	q.pending[k][call] = true
	return func() {
		q.mu.Lock()
		delete(q.pending[k], call)
		q.mu.Unlock()
	}
}

// hold counts l as live for its node and name until it ends.
func (q *chaosRequests) hold(node int, name string, l *coordinator.Lease) {
	k := chaosKey{node, name}
	q.mu.Lock()
	q.live[k]++
	q.mu.Unlock()
	context.AfterFunc(l.Context(), func() {
		q.mu.Lock()
		q.live[k]--
		q.mu.Unlock()
	})
}

// callCtx bounds one Acquire or TryAcquire: mostly the usual bound, but
// also short deadlines, a cancel midway, an already cancelled context, or
// a long wait. kind names the choice.
func callCtx(parent context.Context, rng *rand.Rand) (ctx context.Context, cancel context.CancelFunc, kind string) {
	switch p := rng.Float64(); {
	case p < 0.2:
		ctx, cancel = context.WithTimeout(parent, between(rng, time.Millisecond, 300*time.Millisecond))
		return ctx, cancel, "short"
	case p < 0.35:
		c, stop := context.WithCancel(parent)
		t := time.AfterFunc(between(rng, 0, 200*time.Millisecond), stop)
		return c, func() { t.Stop(); stop() }, "cancelled-midway"
	case p < 0.4:
		ctx, cancel = context.WithCancel(parent)
		cancel()
		return ctx, cancel, "cancelled"
	case p < 0.5:
		ctx, cancel = context.WithTimeout(parent, 3*chaosOpTimeout)
		return ctx, cancel, "long"
	}
	ctx, cancel = context.WithTimeout(parent, chaosOpTimeout)
	return ctx, cancel, "normal"
}

// releaseCtx bounds one Release: mostly the usual bound, sometimes a short
// deadline or an expired context (the release must still be delivered).
func releaseCtx(rng *rand.Rand) (context.Context, context.CancelFunc) {
	switch p := rng.Float64(); {
	case p < 0.15:
		return context.WithTimeout(context.Background(), between(rng, time.Millisecond, 50*time.Millisecond))
	case p < 0.3:
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx, cancel
	}
	return context.WithTimeout(context.Background(), chaosOpTimeout)
}

// duplicator returns node i's forward duplicator: it sends chaosDupRatio
// of the forwarded commands again after 0 to 3 s (past the RPC timeout
// for some).
func (r *chaosRun) duplicator(i int) func() (time.Duration, bool) {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(r.seed, uint64(i)<<40|uint64(r.incarnation[i])))
	return func() (time.Duration, bool) {
		mu.Lock()
		defer mu.Unlock()
		if rng.Float64() >= chaosDupRatio {
			return 0, false
		}
		return between(rng, 0, 3*time.Second), true
	}
}

// slowForwards delays all traffic from a random non-leader node to the
// leader past the RPC timeout for a while.
func (r *chaosRun) slowForwards(rng *rand.Rand, victim int) {
	cl := r.cl
	leader, err := cl.Leader()
	if err != nil || leader.Index == victim {
		return
	}
	from, to := cl.Node(victim).C(), leader.C()
	if from == nil || to == nil {
		return
	}
	rpcTimeout := cl.Node(victim).Config.RPCTimeout
	d := between(rng, rpcTimeout+100*time.Millisecond, rpcTimeout+time.Second)
	f := r.h.addFault(fmt.Sprintf("slow-forwards(%v)", d.Round(time.Millisecond)), []int{victim})
	cl.Net.SetDelay(from.RPCAddr(), to.RPCAddr(), d, d)
	pace(context.Background(), between(rng, time.Second, 3*time.Second))
	cl.Net.SetDelay(from.RPCAddr(), to.RPCAddr(), 0, 0)
	// A stream delivers nothing before the data queued ahead of it: what
	// was sent under the delay arrives up to d after it is lifted, and
	// holds up everything sent on those connections since. The fault ends
	// then (TestSimulation seed 3529: the leader's heartbeats to the
	// victim, queued behind delayed bytes, reached it 2.7 s after the
	// "heal", its session expired, and the checks that start when the
	// faults are over saw it).
	pace(context.Background(), d)
	r.h.healFault(f)
}

// chaosSample is monitorBlocked's sampling period.
const chaosSample = 50 * time.Millisecond

// monitorBlocked watches, from after (when the faults stopped) until ctx
// ends, for Acquires blocked more than ttl while their node's session
// holds the name and no Lease of that node does, and for orphans: a name
// held or queued by a node's current session while that node has no live
// Lease or call in flight for it, for more than ttl. Both count the time
// the process ran: a sample late by more than a period is a stall of the
// whole process (a host that took its CPU away; the lessor extends every
// deadline by such a stall too), and moves every start forward by it.
func (r *chaosRun) monitorBlocked(ctx context.Context, after time.Time, ttl time.Duration) {
	q := r.req
	orphanSince := map[chaosOrphan]time.Time{}
	tick := time.NewTicker(chaosSample)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		if stall := now.Sub(last) - chaosSample; stall > chaosSample && last.After(after) {
			after = r.discount(stall, after, orphanSince)
		}
		last = now
		r.watchOrphans(now, after, ttl, orphanSince)
		q.mu.Lock()
		for k, calls := range q.pending {
			c := r.cl.Node(k.node).C()
			own := false
			if c != nil && q.live[k] == 0 {
				h, ok := c.Holder(k.name)
				own = ok && h.Session != "" && h.Session == c.SessionID()
			}
			for call := range calls {
				switch {
				case !call.wait || !own:
					call.heldSince = time.Time{}
				case call.heldSince.IsZero():
					call.heldSince = now
				case !call.reported && now.Sub(later(call.heldSince, after)) > chaosBlockedLimit:
					call.reported = true
					q.violations = append(q.violations, fmt.Sprintf(
						"blocked Acquire: node%d's Acquire for %q (started %s) blocked since %s while its own session holds it and no Lease of the node does",
						k.node, k.name, r.h.ms(call.start), r.h.ms(call.heldSince)))
				}
			}
		}
		q.mu.Unlock()
	}
}

// discount moves every start monitorBlocked counts from, and after, forward
// by stall; it returns the new after.
func (r *chaosRun) discount(stall time.Duration, after time.Time, orphanSince map[chaosOrphan]time.Time) time.Time {
	for o, since := range orphanSince {
		if !since.IsZero() {
			orphanSince[o] = since.Add(stall)
		}
	}
	r.req.mu.Lock()
	for _, calls := range r.req.pending {
		for call := range calls {
			if !call.heldSince.IsZero() {
				call.heldSince = call.heldSince.Add(stall)
			}
		}
	}
	r.req.mu.Unlock()
	return after.Add(stall)
}

// checkNoOrphans waits, once every worker stopped and the cluster has a
// leader again, until no lease name is held or queued on the leader's
// replica. A node's current session must have let go within settle; the
// session of a crashed incarnation goes when the leader expires it, which a
// leader change may put off by another TTL and grace, so it gets twice
// that. It returns the violation, if any.
func (r *chaosRun) checkNoOrphans(settle time.Duration) []string {
	r.cl.WaitFormed(formTimeout)
	strict := time.Now().Add(settle)
	var last string
	late := false
	err := holdfasttest.Poll(2*settle, func() error {
		leader, err := r.cl.Leader()
		if err != nil || leader.C() == nil {
			last = fmt.Sprint("no leader: ", err)
			return holdfasttest.ErrNotYet
		}
		last, late = "", false
		for _, info := range leader.C().Leases() {
			if !slices.Contains(chaosNames, info.Name) {
				continue
			}
			current := r.currentSession(info.Holder.Session)
			last += fmt.Sprintf(" %s held by %s (session %s, current session of a node: %v) with %d waiting;",
				info.Name, info.Holder.Node, info.Holder.Session, current, info.Waiters)
			late = late || current
			for _, w := range leader.C().LeaseWaiters(info.Name) {
				late = late || r.currentSession(w.Session)
			}
		}
		switch {
		case last == "":
			return nil
		case late && time.Now().After(strict):
			return nil // reported below
		}
		return holdfasttest.ErrNotYet
	})
	if err != nil || last != "" {
		return []string{"orphan: after every worker stopped and the cluster formed again, still held or queued:" + last}
	}
	return nil
}

// currentSession reports whether id is some running node's current session.
func (r *chaosRun) currentSession(id string) bool {
	for _, n := range r.cl.Running() {
		if c := n.C(); c != nil && c.SessionID() == id {
			return true
		}
	}
	return false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// chaosOrphan is one session's grant or queue entry for one name.
type chaosOrphan struct {
	name, session string
	queued        bool
}

// watchOrphans samples the leader's replica for orphans (see
// monitorBlocked); since remembers when each was first seen.
func (r *chaosRun) watchOrphans(now, after time.Time, ttl time.Duration, since map[chaosOrphan]time.Time) {
	leader, err := r.cl.Leader()
	if err != nil || leader.C() == nil {
		return
	}
	lc := leader.C()
	nodeOf := map[string]int{}
	for _, n := range r.cl.Running() {
		if c := n.C(); c != nil && c.SessionID() != "" {
			nodeOf[c.SessionID()] = n.Index
		}
	}
	seen := map[chaosOrphan]bool{}
	for _, name := range chaosNames {
		var entries []chaosOrphan
		if h, ok := lc.Holder(name); ok {
			entries = append(entries, chaosOrphan{name: name, session: h.Session})
		}
		for _, w := range lc.LeaseWaiters(name) {
			entries = append(entries, chaosOrphan{name: name, session: w.Session, queued: true})
		}
		for _, o := range entries {
			i, ok := nodeOf[o.session]
			if !ok {
				continue // an old incarnation's session: it expires on its own
			}
			k := chaosKey{i, name}
			r.req.mu.Lock()
			busy := r.req.live[k] > 0 || len(r.req.pending[k]) > 0
			r.req.mu.Unlock()
			if busy {
				continue
			}
			seen[o] = true
			first, ok := since[o]
			if !ok {
				since[o] = now
				continue
			}
			if !first.IsZero() && now.Sub(later(first, after)) > ttl {
				since[o] = time.Time{} // reported
				what := "held"
				if o.queued {
					what = "queued"
				}
				r.req.mu.Lock()
				r.req.violations = append(r.req.violations, fmt.Sprintf(
					"orphan: %q %s by node%d's session since %s with no Lease or call of the node for it",
					name, what, i, r.h.ms(first)))
				r.req.mu.Unlock()
			}
		}
	}
	for o, t := range since {
		if !seen[o] && !t.IsZero() {
			delete(since, o)
		}
	}
}
