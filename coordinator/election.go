package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leases"
)

// ErrLeaseNotHeld is returned by ElectionCheck.Ready while RunElection does
// not hold the lease.
var ErrLeaseNotHeld = errors.New("holdfast: not holding the lease")

// ErrNotLeading is ErrLeaseNotHeld under its earlier name.
//
// Deprecated: use ErrLeaseNotHeld ("leading" means the raft leader).
var ErrNotLeading = ErrLeaseNotHeld

// ElectionConfig configures RunElection: the lease to acquire and the
// callbacks of a leader election in the style of client-go's.
type ElectionConfig struct {
	// Name is the lease's name. Required.
	Name string
	// OnStartedLeading is called in a goroutine of its own each time this
	// node gains the lease, with a context that ends when the lease ends
	// (or RunElection's context does) and the lease: pass lease.Token() to
	// every protected resource. It must return soon after ctx ends:
	// RunElection waits for it before it releases the lease, calls
	// OnStoppedLeading or acquires again, so one node never runs two
	// terms at once. Required.
	OnStartedLeading func(ctx context.Context, lease *Lease)
	// OnStoppedLeading, if set, is called after each term, once
	// OnStartedLeading has returned, with why the term ended: ErrReleased
	// when RunElection's context ended (the lease was then released), or the
	// lease's cause (ErrSessionExpired, ErrLeaseLost, ErrShutdown).
	OnStoppedLeading func(cause error)
	// OnNewLeader, if set, is called with each new holder of the lease, in
	// token order, one call at a time: the holders the local replica shows,
	// and this node as each of its terms starts (before its replica may
	// show the grant). A holder is new when its token is above the last one
	// reported. The replica's holders are read only once a Sync has
	// returned, so a grant released before RunElection was called (this
	// node's own Release too) is never reported; without a raft leader the
	// first report waits for one. It runs concurrently with the other
	// callbacks, and the replica's holders may lag them a little.
	OnNewLeader func(holder Holder)
	// Value, if set, is the holder value of each term's grant (WithValue):
	// every node's Holder, Observe and OnNewLeader show it, so followers
	// learn where the leader serves. Lease.SetValue changes it during a
	// term.
	Value string
	// Check, if set, is kept up to date by RunElection: its Ready reports nil
	// only while this node leads. Serve it as a readiness probe to send
	// traffic to the leader only.
	Check *ElectionCheck
}

// ElectionCheck is a readiness check tied to holding RunElection's lease; the
// zero value is ready to use (and not ready: it leads nothing). It is safe
// for concurrent use.
type ElectionCheck struct{ c leases.Check[*Lease] }

// Ready returns nil while RunElection holds the lease with at least
// Session.LeaseMargin left; otherwise an error wrapping ErrLeaseNotHeld, or the
// lease's Checkpoint error (ErrLeaseExpiring, ErrLeaseLost) when it is
// about to end or has just ended.
func (lc *ElectionCheck) Ready() error { return lc.c.Ready(ErrLeaseNotHeld) }

// RunElection acquires the lease cfg.Name until ctx ends, calling
// cfg.OnStartedLeading for each term this node holds it and acquiring it
// again whenever a term ends for any reason but ctx (its session expired,
// the lease was lost). When ctx ends during a term, RunElection cancels the
// term's context, waits for OnStartedLeading to return, then releases the lease so
// that the next waiter takes over at once. It returns nil when ctx ends,
// ErrShutdown when the coordinator shuts down, or at once an error for an
// invalid cfg. Other Acquire errors are logged and retried with backoff.
func (c *Coordinator) RunElection(ctx context.Context, cfg ElectionConfig) error {
	switch {
	case cfg.Name == "" || len(cfg.Name) > fsm.MaxNameLength:
		return fmt.Errorf("%w: ElectionConfig.Name must have 1 to %d bytes", ErrInvalidConfig, fsm.MaxNameLength)
	case cfg.OnStartedLeading == nil:
		return fmt.Errorf("%w: ElectionConfig.OnStartedLeading is required", ErrInvalidConfig)
	case checkValue(cfg.Value) != nil:
		return fmt.Errorf("%w: ElectionConfig.Value: %v", ErrInvalidConfig, checkValue(cfg.Value))
	}
	e := &leases.Election[*Lease]{Name: cfg.Name, OnStartedLeading: cfg.OnStartedLeading,
		OnStoppedLeading: cfg.OnStoppedLeading, Shutdown: ErrShutdown, ReleaseTimeout: c.cfg.RPCTimeout, Log: c.log,
		Acquire: func(ctx context.Context) (*Lease, error) { return c.Acquire(ctx, cfg.Name, WithValue(cfg.Value)) }}
	if cfg.Check != nil {
		e.Check = &cfg.Check.c
	}
	if cfg.OnNewLeader != nil {
		e.OnNewLeader = func(h leases.Holder) { cfg.OnNewLeader(toHolder(h)) }
		e.Self = func(l *Lease) leases.Holder {
			return leases.Holder{Node: c.cfg.NodeName, NodeID: c.id, Addr: c.serviceAddr(), Session: l.g.SessionID(), Token: l.Token(),
				Value: l.Value()}
		}
		e.Observe = func(ctx context.Context) <-chan leases.Holder {
			return observe(c, ctx, cfg.Name, func(h leases.Holder) leases.Holder { return h })
		}
		e.Sync = c.Sync
	}
	return e.Run(ctx)
}
