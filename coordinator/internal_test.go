package coordinator

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/internal/walog"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// A negative Shards.MaxMoves means no limit, as shardown's
// MaxMovesInFlight does; zero keeps its default.
func TestMaxMovesNegativeMeansNoLimit(t *testing.T) {
	cfg := DefaultLocalConfig()
	cfg.NodeName, cfg.Cluster.BootstrapExpect = "n", 0
	cfg.Shards.MaxMoves = -1
	if err := cfg.validate(); err != nil {
		t.Fatalf("MaxMoves -1: %v, want accepted", err)
	}
	for in, want := range map[int]int{-1: math.MaxInt, 0: 0, 3: 3} {
		if got := maxMoves(in); got != want {
			t.Errorf("maxMoves(%d) = %d, want %d", in, got, want)
		}
	}
}

// TestStatusWords: the public role and member-state words are raft's and
// gossip's own names, mapped one to one.
func TestStatusWords(t *testing.T) {
	for st, want := range map[raft.RaftState]RaftState{
		raft.Follower: StateFollower, raft.Candidate: StateCandidate, raft.Leader: StateLeader,
		raft.Shutdown: StateShutdown, raft.RaftState(99): StateShutdown,
	} {
		if got := raftnode.StateOf(st); got != want {
			t.Errorf("raftnode.StateOf(%v) = %q, want %q", st, got, want)
		}
	}
	for st, want := range map[membership.State]MemberState{
		membership.Alive: MemberAlive, membership.Suspect: MemberSuspect,
		membership.Failed: MemberFailed, membership.Left: MemberLeft,
	} {
		if got := MemberState(st.String()); got != want {
			t.Errorf("membership.%v reads as %q, want %q", st, got, want)
		}
	}
}

// TestCheckpointRule: Checkpoint passes while at least LeaseMargin is left
// on the clock, fails with an *ExpiringError (ErrLeaseExpiring) saying how
// much is left below the margin, and once the clock reaches the session's
// deadline (a jump, as after a suspend) fails with ErrLeaseLost wrapping
// ErrSessionExpired; Err and Remaining agree.
func TestCheckpointRule(t *testing.T) {
	const margin = time.Second
	clk := &testkit.Clock{}
	s := session.New(context.Background(), "s", 10*time.Second, clk, time.Millisecond)
	defer s.End(ErrShutdown)
	until := 10 * time.Second
	s.Extend(time.Now().Add(until), until)
	b := &belief{margin: margin, life: session.NewBelief(s)}

	clk.Set(until - margin)
	if err := b.Checkpoint(); err != nil {
		t.Fatalf("Checkpoint with exactly the margin left: %v", err)
	}
	clk.Set(until - margin/2)
	var ee *ExpiringError
	if err := b.Checkpoint(); !errors.As(err, &ee) || !errors.Is(err, ErrLeaseExpiring) || ee.Remaining != margin/2 {
		t.Fatalf("Checkpoint with half the margin left: %v, want an *ExpiringError with %v left", err, margin/2)
	}
	if b.Err() != nil {
		t.Fatalf("Err while the belief holds: %v", b.Err())
	}
	clk.Set(until)
	if err := b.Checkpoint(); !errors.Is(err, ErrLeaseLost) || !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("Checkpoint at the deadline: %v, want ErrLeaseLost wrapping ErrSessionExpired", err)
	}
	if !errors.Is(b.Err(), ErrSessionExpired) || b.Remaining() != 0 {
		t.Fatalf("after the deadline: Err %v, Remaining %v", b.Err(), b.Remaining())
	}
}

// BenchmarkBeliefCheckpoint measures Checkpoint on the system clock (one
// clock read per call).
func BenchmarkBeliefCheckpoint(b *testing.B) {
	clk := SystemClock()
	s := session.New(context.Background(), "s", time.Hour, clk, time.Second)
	s.Extend(time.Now().Add(time.Hour), clk.Now()+time.Hour)
	defer s.End(ErrShutdown)
	bl := &belief{margin: time.Second, life: session.NewBelief(s)}
	for b.Loop() {
		if err := bl.Checkpoint(); err != nil {
			b.Fatal(err)
		}
	}
}

// semRefusals returns the state machine's refusals of a full semaphore's
// try-acquire and of an acquire with another limit.
func semRefusals(t *testing.T) (full, limit error) {
	t.Helper()
	f := fsm.New()
	index := uint64(0)
	apply := func(cmd fsm.Command) fsm.Result {
		data, err := fsm.Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		index++
		r, _ := f.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}).(fsm.Result)
		return r
	}
	apply(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: "s1", Node: "n1", NodeID: "i1", TTLNanos: int64(time.Minute)}})
	if r := apply(fsm.Command{Op: fsm.OpSemAcquire, Sem: &fsm.SemCmd{Name: "s", Session: "s1", Request: 1, Limit: 1}}); r.Err != nil {
		t.Fatalf("first acquire: %v", r.Err)
	}
	full = apply(fsm.Command{Op: fsm.OpSemAcquire, Sem: &fsm.SemCmd{Name: "s", Session: "s1", Request: 2, Limit: 1}}).Err
	limit = apply(fsm.Command{Op: fsm.OpSemAcquire, Sem: &fsm.SemCmd{Name: "s", Session: "s1", Request: 3, Limit: 3}}).Err
	if !errors.Is(full, fsm.ErrSemFull) || !errors.Is(limit, fsm.ErrSemLimit) {
		t.Fatalf("state machine refusals %v and %v", full, limit)
	}
	return full, limit
}

// TestForwardedSemaphoreRefusalKeepsItsKind: a semaphore refusal a
// follower gets back from the leader over the network is ErrSemaphoreFull
// or ErrSemaphoreLimit (and ErrRejected) with the same message as on the
// leader itself, carried by its own wire code rather than by its text.
func TestForwardedSemaphoreRefusalKeepsItsKind(t *testing.T) {
	full, limit := semRefusals(t)
	var refusal error
	leader, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	d := wire.NewDispatcher(nil)
	d.Handle(wire.MethodApply, raftnode.ServeForwards(raftnode.ForwardOptions{Limit: 1,
		Apply: func(context.Context, []byte) (wire.ApplyResult, error) {
			return wire.ApplyResult{}, wire.Wrap(wire.ErrRejected, refusal) // as ApplyLocal returns it
		}}))
	leader.SetHandler(transport.HandlerFunc(d.ServeRPC))
	follower, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	semError := func(err error) error { return leases.SemError(err, ErrSemaphoreFull, ErrSemaphoreLimit) }
	for _, tc := range []struct {
		fsmErr, want error
		code         string
	}{{full, ErrSemaphoreFull, wire.CodeSemFull}, {limit, ErrSemaphoreLimit, wire.CodeSemLimit}} {
		refusal = tc.fsmErr
		raw := follower.Call(ctx, leader.Addr(), wire.MethodApply, wire.ApplyRequest{Data: []byte{1}}, nil)
		var re *transport.RemoteError
		if !errors.As(raw, &re) || re.Code != tc.code {
			t.Fatalf("the leader answered %v, want code %q", raw, tc.code)
		}
		got := semError(wire.FromRemote(raw))
		local := semError(wire.Wrap(wire.ErrRejected, tc.fsmErr))
		if !errors.Is(got, tc.want) || !errors.Is(got, wire.ErrRejected) {
			t.Errorf("forwarded refusal %q: not %q and ErrRejected", got, tc.want)
		}
		if got.Error() != local.Error() {
			t.Errorf("forwarded refusal reads %q, on the leader %q", got, local)
		}
	}
}

// SetLogFS makes the node of c keep its raft write-ahead log on fs (the
// rest of its data dir stays on disk): TestSimulation's in-memory disks.
func SetLogFS(c *Config, fs walog.FS) { c.logFS = fs }

// TestIdempotentOnLeader: a pin or rule whose leader was lost before its
// commit was known comes back as ErrNotLeader (Operate asks the next
// leader), keeping raft's cause; any other outcome is passed through.
func TestIdempotentOnLeader(t *testing.T) {
	for _, lost := range []error{raft.ErrLeadershipLost, raftnode.ErrLeaderChanged, wire.ErrNoLeader} {
		_, err := idempotentOnLeader(wire.ApplyResult{}, lost)
		if !errors.Is(err, wire.ErrNotLeader) || !errors.Is(err, lost) {
			t.Errorf("%v: got %v, want ErrNotLeader wrapping it", lost, err)
		}
	}
	rejected := errors.Join(wire.ErrRejected, errors.New("bad pin"))
	if _, err := idempotentOnLeader(wire.ApplyResult{}, rejected); err != rejected {
		t.Errorf("a rejection became %v", err)
	}
	if res, err := idempotentOnLeader(wire.ApplyResult{Count: 3}, nil); err != nil || res.Count != 3 {
		t.Errorf("a success became %+v, %v", res, err)
	}
}
