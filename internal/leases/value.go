package leases

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// valueState is a lease grant's holder value as its holder set it: the
// last value committed, and the sequence of the last update sent.
type valueState struct {
	mu  sync.Mutex
	cur string
	seq uint64
}

// Value returns the grant's holder value: the acquire's, or the last one
// SetValue committed.
func (g *Grant) Value() string {
	g.value.mu.Lock()
	defer g.value.mu.Unlock()
	return g.value.cur
}

// SetValue sets the holder value of the grant (a lease, not a permit)
// without a new grant: every replica then shows it with the holder, under
// the same token (etcd's Proclaim). It returns once the change has
// committed. It fails with an error wrapping wire.ErrLeaseLost when the grant is
// no longer held (on this node's belief, or in the cluster's state),
// fsm.ErrMalformed for a value that is too long or not UTF-8, or ctx's
// error (the update may then still commit later; a later SetValue, which
// takes a higher sequence, wins over it). Of concurrent calls, the one
// that numbered its update last wins.
func (g *Grant) SetValue(ctx context.Context, value string) error {
	if g.kind != Lease {
		return fmt.Errorf("holdfast: a semaphore permit carries no holder value")
	}
	if err := fsm.CheckValue(value); err != nil {
		return err
	}
	if err := context.Cause(g.belief.Context()); errors.Is(err, wire.ErrReleased) {
		return err // released by this node
	} else if err != nil {
		return wire.Wrap(wire.ErrLeaseLost, err)
	}
	g.value.mu.Lock()
	g.value.seq++
	seq := g.value.seq
	g.value.mu.Unlock()
	cmd := fsm.Command{Op: fsm.OpLeaseValue, Lease: &fsm.LeaseCmd{Name: g.name, Session: g.sess.ID(), Request: g.req,
		Token: g.token, Value: value, ValueSeq: seq}}
	res, err := g.p.retry(ctx, cmd)
	switch {
	case err != nil:
		return err
	case res.Stale:
		return fmt.Errorf("%w: the cluster no longer shows this grant of %q", wire.ErrLeaseLost, g.name)
	}
	g.value.mu.Lock()
	if !res.Noop {
		g.value.cur = value
	}
	g.value.mu.Unlock()
	return nil
}
