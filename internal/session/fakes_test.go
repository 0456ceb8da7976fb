package session

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m, 5*time.Second) }

// fakeWall is the leader's wall clock for a Lessor: it only moves when
// told.
type fakeWall struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeWall() *fakeWall { return &fakeWall{t: time.Unix(1_000_000, 0)} }

func (w *fakeWall) Now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.t
}

func (w *fakeWall) advance(d time.Duration) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t = w.t.Add(d)
	return w.t
}

// replica is a real state machine behind a fake raft: commands apply at
// once, in order.
type replica struct {
	mu    sync.Mutex
	f     *fsm.FSM
	index uint64
	fail  error // non-nil: proposals fail with it and change nothing
}

func newReplica() *replica { return &replica{f: fsm.New()} }

func (r *replica) apply(cmd fsm.Command) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	data, err := fsm.Encode(cmd)
	if err != nil {
		return err
	}
	r.index++
	res, _ := r.f.Apply(&raft.Log{Index: r.index, Type: raft.LogCommand, Data: data}).(fsm.Result)
	return res.Err
}

func (r *replica) setFail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = err
}

// create commits a session with the given TTL.
func (r *replica) create(t *testing.T, id string, ttl time.Duration) {
	t.Helper()
	cmd := fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{ID: id, Node: "n-" + id, NodeID: "node-" + id, TTLNanos: int64(ttl)}}
	if err := r.apply(cmd); err != nil {
		t.Fatal(err)
	}
}

func (r *replica) has(id string) bool {
	_, ok := r.f.View().Session(id)
	return ok
}

// errNotLeaderTest is what the tests' NotLeader returns.
var errNotLeaderTest = errors.New("not the leader (test)")

// voterSet is a fake raft configuration and the voters' answers to
// confirmation requests: a voter says yes while its term is the asked one.
type voterSet struct {
	mu     sync.Mutex
	voters []Voter
	terms  map[string]uint64 // addr → the voter's current term
	down   map[string]bool   // addr → the request fails
	asked  []uint64          // terms asked, in order
	gate   chan struct{}     // non-nil: every answer waits for it to close
	// slow holds the answers of a voter (by addr) until its channel
	// closes; askedOf counts each voter's questions, cut those whose
	// context ended while they waited.
	slow    map[string]chan struct{}
	askedOf map[string]int
	cut     int
}

func (vs *voterSet) list() []Voter {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return append([]Voter(nil), vs.voters...)
}

func (vs *voterSet) confirm(ctx context.Context, v Voter, term uint64) (bool, error) {
	addr := v.Addr
	vs.mu.Lock()
	vs.asked = append(vs.asked, term)
	if vs.askedOf == nil {
		vs.askedOf = map[string]int{}
	}
	vs.askedOf[addr]++
	gate, down, t := vs.gate, vs.down[addr], vs.terms[addr]
	if g, ok := vs.slow[addr]; ok {
		gate = g
	}
	vs.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			vs.mu.Lock()
			vs.cut++
			vs.mu.Unlock()
			return false, ctx.Err()
		}
	}
	if down {
		return false, errors.New("unreachable (test)")
	}
	return t == term, nil
}

func (vs *voterSet) set(addr string, term uint64, down bool) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.terms[addr], vs.down[addr] = term, down
}

func (vs *voterSet) askedCount() int {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return len(vs.asked)
}

// lessorRig is a Lessor over fake neighbours: a fake wall clock, a real
// replica behind a fake raft, and n voters (this node first) in term 7.
// Its stall threshold is an hour, so the fake clock's jumps are not
// stalls; newStallRig sets a realistic one.
type lessorRig struct {
	l       *Lessor
	wall    *fakeWall
	rep     *replica
	voters  *voterSet
	term    atomic.Uint64
	leading atomic.Bool
	grace   time.Duration
	expired atomic.Int64 // expiries counted
	// beforeExpire, if set before the lessor runs, is called before each
	// expiry is committed (a slow raft apply).
	beforeExpire func()
}

func newLessorRig(t *testing.T, n int) *lessorRig { return newStallRig(t, n, time.Hour) }

// newStallRig is a lessorRig whose lessor treats a gap longer than
// threshold between two passes as a stall.
func newStallRig(t *testing.T, n int, threshold time.Duration) *lessorRig {
	r := &lessorRig{wall: newFakeWall(), rep: newReplica(), grace: 2 * time.Second,
		voters: &voterSet{terms: map[string]uint64{}, down: map[string]bool{}}}
	r.term.Store(7)
	r.leading.Store(true)
	for i := range n {
		v := Voter{ID: string(rune('a' + i)), Addr: "addr-" + string(rune('a'+i))}
		r.voters.voters = append(r.voters.voters, v)
		r.voters.terms[v.Addr] = 7
	}
	r.l = NewLessor(LessorOptions{
		Now:  r.wall.Now,
		View: r.rep.f.View,
		Expire: func(_ context.Context, cmd fsm.Command) error {
			if r.beforeExpire != nil {
				r.beforeExpire()
			}
			if err := r.rep.apply(cmd); err != nil {
				return err
			}
			r.expired.Add(1)
			return nil
		},
		Term:           r.term.Load,
		Leading:        r.leading.Load,
		Voters:         r.voters.list,
		Self:           "a",
		Confirm:        r.voters.confirm,
		ConfirmTimeout: time.Minute,
		ExpiryGrace:    r.grace,
		StallThreshold: threshold,
		NotLeader:      func() error { return errNotLeaderTest },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.l.ConfirmLoop(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

// step runs one pass of the lessor's loop: the stall check, follow the
// replica, expire what is due.
func (r *lessorRig) step() {
	r.l.pass(context.Background(), r.rep.f.View())
}

// keepAlive sends one keepalive with a generous deadline.
func (r *lessorRig) keepAlive(t *testing.T, id string) (uint64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return r.l.KeepAlive(ctx, id)
}
