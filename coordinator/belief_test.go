package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// TestDeposedLeaderCannotExtendBelief reproduces the gap that lease rule 3
// in docs/ARCHITECTURE.md covers: the leader L keeps receiving from its followers (their
// acknowledgements still arrive) but its own messages no longer reach them,
// so they elect a new leader N while L still believes it leads and a holder
// H, who only hears from L, keeps sending L keepalives. It checks that every
// belief H obtained ends before N's deadline for H's session (N may then
// expire it and grant H's leases to others), and that L answered no
// keepalive that arrived after N took over.
func TestDeposedLeaderCannotExtendBelief(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 4, Voters: 3, InMemory: true, NoDataDir: []int{3}})
	cl.WaitFormed(formTimeout)
	h := cl.Node(3)
	cl.WaitFor("the holder in a session", formTimeout, func() error {
		if h.C().SessionID() == "" {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	session := h.C().SessionID()
	// L is whoever leads just before the cut (on a loaded host leadership
	// may have moved since the cluster formed), and only a takeover after
	// the cut counts as N's.
	leader := cl.WaitLeader(formTimeout)
	w := watchTakeover(cl, leader, h, session)
	host := func(n *holdfasttest.Node) string { return fmt.Sprintf("n%d", n.Index) }
	w.mu.Lock()
	w.cut = time.Now()
	w.mu.Unlock()
	for _, f := range w.followers {
		cl.Net.DropOneWay(host(leader), host(f)) // L's heartbeats and confirmations are lost
		cl.Net.DropOneWay(host(f), host(h))      // H never hears of the new leader
	}
	beliefs, deadline := w.keepAsking(t, h, session)
	w.mu.Lock()
	defer w.mu.Unlock()
	if deadline.IsZero() {
		t.Fatalf("new leader %s does not track the holder's session", w.newLeader.Name)
	}
	cfg := w.newLeader.C().Config()
	t.Logf("cut at 0, new leader %s active at %v, its deadline for H at %v (TTL %v + grace %v); %d keepalives answered by L, %d beliefs",
		w.newLeader.Name, w.activated.Sub(w.cut), deadline.Sub(w.cut), cfg.Session.TTL, cfg.Session.ExpiryGrace, len(w.answered), len(beliefs))
	for _, a := range w.answered {
		if a.After(w.activated) {
			t.Errorf("deposed leader answered a keepalive that arrived %v after the new leader took over", a.Sub(w.activated))
		}
	}
	for _, b := range beliefs {
		if !b.Before(deadline) {
			t.Errorf("holder believes until %v, past the new leader's deadline %v", b.Sub(w.cut), deadline.Sub(w.cut))
		}
	}
	if w.newLeader.C().RaftState() != coordinator.StateLeader {
		t.Logf("note: %s no longer leads at the end", w.newLeader.Name)
	}
	cl.Heal()
}

// takeover records, through lessor hooks, the first follower whose lessor
// activates at or after cut (the new leader N), and the arrival of every
// keepalive of the holder's session the old leader L answered.
type takeover struct {
	followers []*holdfasttest.Node // the voters other than L

	mu        sync.Mutex
	cut       time.Time // zero until the test cuts L off
	activated time.Time
	newLeader *holdfasttest.Node
	answered  []time.Time
}

// watchTakeover installs the hooks on leader and on the voters other than
// leader and the holder h.
func watchTakeover(cl *holdfasttest.Cluster, leader, h *holdfasttest.Node, session string) *takeover {
	w := &takeover{}
	for _, n := range cl.Running() {
		if n != leader && n != h {
			w.followers = append(w.followers, n)
			n.C().SetLessorHooks(func(at time.Time) {
				w.mu.Lock()
				defer w.mu.Unlock()
				if w.activated.IsZero() && !w.cut.IsZero() && !at.Before(w.cut) {
					w.activated, w.newLeader = at, n
				}
			}, nil)
		}
	}
	leader.C().SetLessorHooks(nil, func(s string, arrived time.Time) {
		if s == session {
			w.mu.Lock()
			w.answered = append(w.answered, arrived)
			w.mu.Unlock()
		}
	})
	return w
}

// keepAsking has H keep asking L until a second after N took over,
// recording the belief each answered keepalive gave it (starting with the
// one it had). N's deadline for H is read as soon as N took over: it is
// fixed (activation + TTL + grace, as H's keepalives never reach N), and N
// could lose its leadership again before the loop ends.
func (w *takeover) keepAsking(t *testing.T, h *holdfasttest.Node, session string) (beliefs []time.Time, deadline time.Time) {
	t.Helper()
	beliefs = []time.Time{h.C().SessionValidUntil()}
	var after time.Time
	for {
		if err := h.C().KeepAliveNow(); err == nil {
			beliefs = append(beliefs, h.C().SessionValidUntil())
		}
		w.mu.Lock()
		a, n, cut := w.activated, w.newLeader, w.cut
		w.mu.Unlock()
		if !a.IsZero() && deadline.IsZero() {
			deadline, _ = n.C().LessorDeadline(session)
		}
		if !a.IsZero() && after.IsZero() {
			after = time.Now().Add(time.Second)
		}
		if !after.IsZero() && time.Now().After(after) {
			return beliefs, deadline
		}
		if time.Since(cut) > formTimeout {
			t.Fatal("no new leader took over")
		}
	}
}

// TestStalledLessorExpiresOnlyTheStopped: the leader's lessor is frozen
// (its loop and every keepalive reaching it block, as in a leader starved
// of CPU) for longer than its stall threshold (Session.TTL/10) while a
// non-voter's holder is stopped (its network paused). After the freeze the
// lessor has detected the stall (lease rule 3), the stopped holder's
// session is still expired, and it is the only expiry: every running
// node keeps the session it had.
func TestStalledLessorExpiresOnlyTheStopped(t *testing.T) {
	t.Parallel()
	regs := make([]*prometheus.Registry, 4)
	for i := range regs {
		regs[i] = prometheus.NewRegistry()
	}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 4, Voters: 3, InMemory: true, NoDataDir: []int{3},
		Configure: func(i int, c *coordinator.Config) { c.Registerer = regs[i] }})
	cl.WaitFormed(formTimeout)
	cl.WaitFor("every node in a session", formTimeout, func() error {
		for _, n := range cl.Running() {
			if n.C().SessionID() == "" {
				return holdfasttest.ErrNotYet
			}
		}
		return nil
	})
	sessions := map[int]string{}
	for _, n := range cl.Running() {
		sessions[n.Index] = n.C().SessionID()
	}
	leader := cl.WaitLeader(formTimeout)
	freeze := leader.Config.Session.TTL / 4 // 2.5 × the stall threshold
	var frozen atomic.Bool
	thaw := make(chan struct{})
	leader.C().PauseLessor(func() {
		if frozen.Load() {
			<-thaw
		}
	})
	cl.Pause(3) // the stopped holder
	frozen.Store(true)
	time.Sleep(freeze) // the fault's length, not a synchronisation
	frozen.Store(false)
	close(thaw)

	expiries := func() float64 {
		sum := 0.0
		for _, reg := range regs[:3] {
			sum += metricValue(t, reg, "holdfast_session_expiries_total", nil)
		}
		return sum
	}
	cl.WaitFor("the stopped holder's session to expire", formTimeout, func() error {
		if expiries() < 1 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	if n := leader.C().LessorStalls(); n < 1 {
		t.Errorf("the lessor frozen for %v detected no stall", freeze)
	}
	if n := expiries(); n != 1 {
		t.Errorf("%v session expiries, want 1 (the stopped holder's)", n)
	}
	for i := range 3 {
		if got := cl.Node(i).C().SessionID(); got != sessions[i] {
			t.Errorf("node%d: session %q, had %q before the stall", i, got, sessions[i])
		}
	}
}

// TestEndedSessionClosedAfterHeal cuts the leader off until its session
// lapsed and its first attempt to close it has timed out, then heals: the
// node must close the ended session itself once it reaches the new leader,
// so its shards move on at once. The new leader would expire it only
// SessionTTL + ExpiryGrace after its election; ExpiryGrace is long here so
// that an expiry cannot be what frees the shards within the wait.
func TestEndedSessionClosedAfterHeal(t *testing.T) {
	t.Parallel()
	const shards = 8
	const grace = 30 * time.Second
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true, Configure: func(_ int, c *coordinator.Config) {
		c.Shards.Count = shards
		c.Session.ExpiryGrace = grace
	}})
	leader := cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, shards, formTimeout)
	victim := leader.Index
	old := cl.Node(victim).C().SessionID()
	if old == "" {
		t.Fatal("the leader has no session")
	}
	cfg := cl.Node(victim).Config

	cl.Isolate(victim)
	cl.WaitFor("the cut-off node's session belief to lapse", formTimeout, func() error {
		if cl.Node(victim).C().SessionID() == old {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	// The fault schedule: stay cut off past the first close attempt's
	// RPCTimeout, so that only a retry can close the session.
	pace(context.Background(), cfg.RPCTimeout+500*time.Millisecond)
	cl.Heal()
	healed := time.Now()
	cl.WaitFormed(formTimeout)

	// Any leader elected during the isolation keeps the old session until
	// at least healed + grace: waiting a third of that shows whether the
	// node closed it.
	err := holdfasttest.Poll(grace/3, func() error {
		l, err := cl.Leader()
		if err != nil {
			return err
		}
		for s := range coordinator.ShardID(shards) {
			if o, ok := l.C().Owner(s); ok && o.Session == old {
				return fmt.Errorf("%w: shard %d still owned by the ended session %.8s", holdfasttest.ErrNotYet, s, old)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v after the heal: %v", time.Since(healed).Round(time.Millisecond), err)
	}
	t.Logf("the ended session's shards were free again %v after the heal", time.Since(healed).Round(time.Millisecond))
}

// freshHolder acquires "suspend" on c and waits until c owns a shard, and
// returns the lease and the shards, both live: the lease passes its
// checkpoint after the shards are seen. A session that a stall of the
// machine ended meanwhile (the lease lost with it: "session expired") is
// not the scenario; it is logged and the lease is asked for again, with
// the next session, until formTimeout.
func freshHolder(t *testing.T, cl *holdfasttest.Cluster, c *coordinator.Coordinator) (*coordinator.Lease, []*coordinator.ShardLease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	for {
		l, err := c.Acquire(ctx, "suspend")
		if err != nil {
			t.Fatal(err)
		}
		cl.WaitFor("the holder owns a shard", formTimeout, func() error {
			if len(c.Owned()) == 0 {
				return holdfasttest.ErrNotYet
			}
			return nil
		})
		shards := c.Owned()
		err = l.Checkpoint()
		if err == nil {
			return l, shards
		}
		if !errors.Is(l.Err(), coordinator.ErrSessionExpired) || ctx.Err() != nil {
			t.Fatalf("fresh lease fails its checkpoint: %v (ended with %v)", err, l.Err())
		}
		t.Logf("the fresh lease's session ended before the scenario began (a stall of the machine): %v; asking again", err)
	}
}

// TestSuspendedHolderSeesLeaseEnded: a holder whose machine was suspended
// for longer than the TTL (its clock jumps, Go's timers do not) must see
// its lease and its shard leases ended the moment it resumes: Checkpoint
// fails at once and the contexts end.
func TestSuspendedHolderSeesLeaseEnded(t *testing.T) {
	t.Parallel()
	clk := testkit.NewJumpClock(coordinator.SystemClock())
	const holder = 1
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true, Configure: func(i int, c *coordinator.Config) {
		if i == holder {
			c.Clock = clk
		}
	}})
	cl.WaitFormed(formTimeout)
	c := cl.Node(holder).C()
	l, shards := freshHolder(t, cl, c)
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	clk.Advance(cl.Node(holder).Config.Session.TTL + time.Second)
	// No timer has fired yet: the checks must read the clock themselves.
	if err := l.Checkpoint(); !errors.Is(err, coordinator.ErrLeaseLost) {
		t.Fatalf("Checkpoint after a suspend longer than the TTL: %v, want ErrLeaseLost", err)
	}
	if r := l.Remaining(); r != 0 {
		t.Fatalf("Remaining after the suspend: %v", r)
	}
	if !errors.Is(l.Err(), coordinator.ErrSessionExpired) {
		t.Fatalf("lease ended with %v, want ErrSessionExpired", l.Err())
	}
	for _, s := range shards {
		if err := s.Checkpoint(); !errors.Is(err, coordinator.ErrLeaseLost) {
			t.Fatalf("shard %d: Checkpoint after the suspend: %v", s.Shard(), err)
		}
	}
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("the lease's context did not end")
	}
}

// TestSuspendedHolderContextEndsWithoutACall: after a suspend, the lease's
// context ends without any call to Checkpoint, Err or Remaining (the
// belief's timer reads the clock again on its own).
func TestSuspendedHolderContextEndsWithoutACall(t *testing.T) {
	t.Parallel()
	clk := testkit.NewJumpClock(coordinator.SystemClock())
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1, Configure: func(_ int, c *coordinator.Config) { c.Clock = clk }})
	cl.WaitFormed(formTimeout)
	c := cl.Node(0).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	l, err := c.Acquire(ctx, "suspend")
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(cl.Node(0).Config.Session.TTL + time.Second)
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("the lease's context did not end after the clock jumped past its session's deadline")
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, coordinator.ErrSessionExpired) {
		t.Fatalf("ended with %v, want ErrSessionExpired", cause)
	}
}
