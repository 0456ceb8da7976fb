// Gossip key rotation under lease and shard load: the rotation steps,
// the joiners that prove them, and the check that nothing was lost.

package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// sinceOf records when each node of group last saw each member of group
// change state.
func sinceOf(group []*holdfasttest.Node) map[string]time.Time {
	in := map[string]bool{}
	for _, n := range group {
		in[n.Name] = true
	}
	out := map[string]time.Time{}
	for _, n := range group {
		for _, m := range n.C().Members() {
			if in[m.Name] {
				out[n.Name+" sees "+m.Name] = m.Since
			}
		}
	}
	return out
}

// churn commits a lease grant and its release from c every few
// milliseconds until ctx ends, counting the rounds; the first error is
// sent on errs.
func churn(ctx context.Context, c *coordinator.Coordinator, ops *atomic.Int64, errs chan<- error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l, err := c.Acquire(ctx, "churn")
		if err == nil {
			err = l.Release(ctx)
		}
		if err != nil {
			if ctx.Err() == nil {
				select {
				case errs <- err:
				default:
				}
			}
			continue
		}
		ops.Add(1)
	}
}

// probeWindow is how long the members are watched after each rotation
// step: memberlist's local profile probes one member a second and declares
// a member that stopped answering dead 3 s (SuspicionMult × ProbeInterval)
// after suspecting it, so a step that broke gossip between two members
// shows as a state change within this window.
const probeWindow = 5 * time.Second

// rotation is the state of TestGossipKeyRotationUnderLoad.
type rotation struct {
	t      *testing.T
	cl     *holdfasttest.Cluster
	keys   [][]byte             // the GossipKeys of the next node added
	group  []*holdfasttest.Node // the members
	since  map[string]time.Time // sinceOf(group) when it last grew
	stepAt time.Time            // when the last keyring step returned
	ops    atomic.Int64         // churn rounds
}

// step runs one keyring change and checks the members' keyrings after it.
func (r *rotation) step(name string, f func(context.Context, []byte) error, key []byte, want ...[]byte) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	if err := f(ctx, key); err != nil {
		r.t.Fatalf("%s: %v", name, err)
	}
	r.stepAt = time.Now()
	r.steady(name, want...)
}

// add creates a node (not started) with the given gossip keys.
func (r *rotation) add(keys ...[]byte) *holdfasttest.Node {
	r.keys = keys
	return r.cl.AddNoStart()
}

// steady checks that every member has exactly keys, primary first, and
// is stable.
func (r *rotation) steady(step string, keys ...[]byte) {
	r.t.Helper()
	if err := keyringIs(r.group, keys...); err != nil {
		r.t.Fatalf("after %s: %v", step, err)
	}
	r.stable(step)
	r.t.Logf("%s: %d members steady, %d lease rounds committed so far", step, len(r.group), r.ops.Load())
}

// stable checks that every member sees every other alive, and none saw
// another change state since the group last grew.
func (r *rotation) stable(step string) {
	r.t.Helper()
	if err := aliveAmong(r.group); err != nil {
		r.t.Fatalf("after %s: %v", step, err)
	}
	now := sinceOf(r.group)
	for k, v := range r.since {
		if !now[k].Equal(v) {
			r.t.Fatalf("after %s: %s changed state at %v", step, k, now[k].Format("15:04:05.000"))
		}
	}
}

// admit starts n and waits until every member sees it alive, it is in the
// raft configuration and it owns a shard (a handoff), and probeWindow has
// passed since the last step. Meanwhile no member may change state and no
// member may list any of outs. n then joins the group.
func (r *rotation) admit(step string, n *holdfasttest.Node, outs ...*holdfasttest.Node) {
	r.t.Helper()
	group := append(r.group, n)
	start := time.Now()
	r.cl.WaitFor(step, formTimeout, func() error {
		outsiders(r.t, group, outs...)
		r.stable(step)
		if err := aliveAmong(group); err != nil {
			return err
		}
		if err := raftMember(r.cl, n); err != nil {
			return err
		}
		if len(n.C().Owned()) == 0 {
			return fmt.Errorf("%w: %s owns no shard", holdfasttest.ErrNotYet, n.Name)
		}
		if d := time.Since(r.stepAt); d < probeWindow {
			return fmt.Errorf("%w: watched the members for %v of %v", holdfasttest.ErrNotYet, d, probeWindow)
		}
		return nil
	})
	r.t.Logf("%s in %v; %d lease rounds committed so far", step, time.Since(start).Round(time.Millisecond), r.ops.Load())
	for _, m := range r.group {
		if err := r.pushPull(n, m); err != nil {
			r.t.Fatalf("%s: %s cannot exchange state with %s: %v", step, n.Name, m.Name, err)
		}
	}
	for _, o := range outs {
		for _, m := range group {
			if err := r.pushPull(o, m); err == nil || !strings.Contains(err.Error(), "crypt") {
				r.t.Fatalf("%s: %s exchanging state with %s: %v, want an encryption error", step, o.Name, m.Name, err)
			}
		}
	}
	r.group = group
	r.since = sinceOf(group)
}

// pushPull makes from join through to alone: a gossip state exchange that
// works only if to accepts from's primary key and from accepts to's.
func (r *rotation) pushPull(from, to *holdfasttest.Node) error {
	addr := to.C().GossipAddr()
	if r.cl.Net != nil {
		var err error
		if addr, err = r.cl.Net.IPAddr(addr); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	_, err := from.C().Join(ctx, []string{addr})
	return err
}

// TestGossipKeyRotationUnderLoad rotates the cluster's gossip key through
// the three steps, each from another node, while every node holds a leader
// lease and shards and one node keeps committing lease commands. After each
// step a node joins whose keys prove the step took effect everywhere: after
// the install one that encrypts with the new key (all must accept it),
// after the switch one that has only the new key (all must encrypt with
// it), after the removal another such node while one with only the old key
// is refused. Each newcomer must also be handed shards, which takes a few
// gossip probe rounds, and meanwhile no member may see another change
// state. In the end no lease and no session was lost, and shards changed
// hands only by handoff.
func TestGossipKeyRotationUnderLoad(t *testing.T) {
	t.Parallel()
	oldKey, newKey := gossipKey(1), gossipKey(2)
	mon := newShardMonitor()
	r := &rotation{t: t, keys: [][]byte{oldKey}}
	r.cl = holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true,
		Configure: func(i int, c *coordinator.Config) {
			mon.configure(i, c)
			c.Shards.Count = 16
			c.Gossip.Keys = r.keys
		}})
	cl := r.cl
	cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, 16, formTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 5*formTimeout)
	defer cancel()
	r.group = cl.Running()
	var leases []*coordinator.Lease
	sessions := map[string]string{}
	for _, n := range r.group {
		l, err := n.C().Acquire(ctx, "job-"+n.Name)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
		sessions[n.Name] = n.C().SessionID()
	}
	r.since = sinceOf(r.group)
	churnCtx, stopChurn := context.WithCancel(ctx)
	churnErrs := make(chan error, 1)
	churnDone := make(chan struct{})
	go func() {
		defer close(churnDone)
		churn(churnCtx, cl.Node(1).C(), &r.ops, churnErrs)
	}()
	defer func() { stopChurn(); <-churnDone }()

	r.step("install", cl.Node(0).C().InstallGossipKey, newKey, oldKey, newKey)
	first := r.add(newKey, oldKey)
	cl.Start(first.Index)
	r.admit("a node encrypting with the new key joined", first)

	r.step("use", cl.Node(1).C().UseGossipKey, newKey, newKey, oldKey)
	second := r.add(newKey)
	cl.Start(second.Index)
	r.admit("a node with only the new key joined", second)

	if err := cl.Node(2).C().RemoveGossipKey(ctx, newKey); !errors.Is(err, coordinator.ErrGossipKeyPrimary) {
		t.Errorf("removing the primary: %v, want ErrGossipKeyPrimary", err)
	}
	r.step("remove", cl.Node(2).C().RemoveGossipKey, oldKey, newKey)
	stale, late := r.add(oldKey), r.add(newKey)
	cl.Start(stale.Index)
	cl.Start(late.Index)
	r.admit("another node with only the new key joined, one with only the old key did not", late, stale)

	stopChurn()
	<-churnDone
	checkNothingLost(t, leases, sessions, cl, mon)
	select {
	case err := <-churnErrs:
		t.Errorf("lease commands failed during the rotation (first error): %v", err)
	default:
	}
	if r.ops.Load() == 0 {
		t.Error("no lease command committed during the rotation")
	}
}

// checkNothingLost checks that every lease is still held, every original
// node kept its session, and every shard lease that ended was handed off.
func checkNothingLost(t *testing.T, leases []*coordinator.Lease, sessions map[string]string,
	cl *holdfasttest.Cluster, mon *shardMonitor) {
	t.Helper()
	for _, l := range leases {
		if err := l.Err(); err != nil {
			t.Errorf("lease %s lost: %v", l.Name(), err)
		}
	}
	for _, n := range cl.Running() {
		if want, ok := sessions[n.Name]; ok && n.C().SessionID() != want {
			t.Errorf("%s changed session: %s, was %s", n.Name, n.C().SessionID(), want)
		}
	}
	mon.mu.Lock()
	handedOff, held := 0, 0
	for s, ls := range mon.leases {
		for _, ml := range ls {
			switch err := ml.l.Err(); {
			case err == nil:
				held++
			case errors.Is(err, coordinator.ErrRevoked):
				handedOff++
			default:
				t.Errorf("shard %d lease of %s (token %d) ended otherwise than by handoff: %v", s, ml.node, ml.l.Token(), err)
			}
		}
	}
	mon.mu.Unlock()
	mon.check(t)
	t.Logf("shard leases: %d held, %d handed off", held, handedOff)
}
