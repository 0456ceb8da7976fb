package shards

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

var (
	errLost     = errors.New("lost")
	errRevoked  = errors.New("revoked")
	errShutdown = errors.New("shutdown")
)

// mgrRig is a Manager over a fake replica and a session the test controls;
// the Manager's value for a lease is the lease itself.
type mgrRig struct {
	*replica
	t        *testing.T
	m        *Manager[*Lease]
	clk      *testkit.Clock
	acquired chan *Lease // every Acquire call
	released chan *Lease // every Release call
	release  func(ctx context.Context, l *Lease) error
	// committed, if set, runs after every command Commit applied.
	committed func(fsm.Command)

	mu      sync.Mutex
	sess    *session.Session
	changed chan struct{}
}

func newMgrRig(t *testing.T, shards int) *mgrRig {
	rig := &mgrRig{replica: newReplica(t, shards), t: t, clk: &testkit.Clock{}, changed: make(chan struct{}),
		acquired: make(chan *Lease, 100), released: make(chan *Lease, 100)}
	rig.m = NewManager(Options[*Lease]{
		View:    rig.view,
		Session: rig.session,
		Commit: func(ctx context.Context, cmd fsm.Command) error {
			_, err := rig.apply(ctx, cmd)
			if rig.committed != nil {
				rig.committed(cmd)
			}
			return err
		},
		IsNoSession: func(err error) bool { return errors.Is(err, fsm.ErrNoSession) },
		Wrap:        func(l *Lease) *Lease { return l },
		Serve:       func(_ context.Context, l *Lease) { rig.acquired <- l },
		HandOff: func(ctx context.Context, l *Lease) error {
			rig.released <- l
			if rig.release != nil {
				return rig.release(ctx, l)
			}
			return nil
		},
		DrainTimeout: 10 * time.Second,
		NodeID:       "node",
		Addr:         "node:1",
		Weight:       2,
		SessionTTL:   ttl,
		Errors:       Errors{Lost: errLost, Revoked: errRevoked, Shutdown: errShutdown},
	})
	t.Cleanup(rig.m.Close)
	return rig
}

// open makes s the node's session: committed in the replica and believed
// until `until` on the fake clock.
func (rig *mgrRig) open(id string, until time.Duration) *session.Session {
	rig.t.Helper()
	cmd := &fsm.SessionCmd{ID: id, Node: "node", NodeID: "node", TTLNanos: int64(ttl)}
	rig.m.FillSessionCmd(cmd)
	rig.mustApply(fsm.Command{Op: fsm.OpSessionCreate, Session: cmd})
	s := session.New(context.Background(), id, ttl, rig.clk, time.Hour)
	s.Extend(time.Now().Add(until-rig.clk.Now()), until)
	rig.mu.Lock()
	rig.sess = s
	close(rig.changed)
	rig.changed = make(chan struct{})
	rig.mu.Unlock()
	return s
}

func (rig *mgrRig) session() (*session.Session, <-chan struct{}) {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	s := rig.sess
	if s != nil && s.Context().Err() != nil {
		s = nil
	}
	return s, rig.changed
}

// sync syncs the manager with the replica's view and the session.
func (rig *mgrRig) sync() {
	s, _ := rig.session()
	rig.m.Sync(rig.view(), s)
}

// next returns the next lease on ch, failing after 10s.
func (rig *mgrRig) next(ch chan *Lease, what string) *Lease {
	rig.t.Helper()
	select {
	case l := <-ch:
		return l
	case <-time.After(10 * time.Second):
		rig.t.Fatalf("no %s call in 10s", what)
		return nil
	}
}

// none checks that no call is waiting on ch.
func (rig *mgrRig) none(ch chan *Lease, what string) {
	rig.t.Helper()
	select {
	case l := <-ch:
		rig.t.Fatalf("unexpected %s call for shard %d token %d", what, l.Shard(), l.Token())
	default:
	}
}

// ended waits for l's end and returns its cause.
func ended(t *testing.T, l *Lease) error {
	t.Helper()
	select {
	case <-l.Belief().Context().Done():
		return context.Cause(l.Belief().Context())
	case <-time.After(10 * time.Second):
		t.Fatalf("lease of shard %d did not end in 10s", l.Shard())
		return nil
	}
}
