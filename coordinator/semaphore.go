package coordinator

import (
	"context"
	"errors"

	"github.com/holdfast-go/holdfast/internal/leases"
)

// kindSemaphore labels semaphore permits in the lease metrics.
const kindSemaphore = "semaphore"

var (
	// ErrSemaphoreFull is returned by TryAcquireSemaphore when every permit
	// of the semaphore is held (or others wait for one).
	ErrSemaphoreFull = errors.New("holdfast: semaphore has no free permit")
	// ErrSemaphoreLimit is returned when a semaphore is asked for with a
	// limit other than the one its current holders and waiters use (the
	// first acquire of a free semaphore fixes its limit).
	ErrSemaphoreLimit = errors.New("holdfast: semaphore limit differs from its holders'")
)

// Permit is one of the N permits of a named semaphore, held by this node.
// Like a Lease, its context is cancelled the moment this node's belief in
// the permit ends: at the holder-side deadline of its session (even if no
// message arrives), when the replica no longer shows the permit, on
// Release, or on Shutdown. Each permit has its own fencing token: pass
// Token() to every protected resource.
type Permit struct {
	belief // a copy of the grant's (they share its life)
	g      *leases.Grant
}

// Name returns the semaphore's name.
func (p *Permit) Name() string { return p.g.Name() }

// Limit returns the semaphore's number of permits.
func (p *Permit) Limit() int { return p.g.Limit() }

// Release gives the permit up: the local context is cancelled first (cause
// ErrReleased), then the release is committed and the freed permit goes to
// the first waiter. Release returns once the release has committed, as
// Lease.Release does: after it returns, every node's Sync then Semaphore
// no longer shows the permit. If ctx ends before the release commits,
// Release returns ctx's error and the node goes on delivering it in the
// background for as long as its session lives. It returns nil if the
// permit had already ended.
func (p *Permit) Release(ctx context.Context) error { return p.g.Release(ctx) }

// ReleaseBeforeCommit gives the permit up as Release does but returns as
// soon as raft on the leader has taken the release in, before it commits;
// it guarantees only that this node's later requests come after it, not
// that other nodes see the permit free once it returns (see
// Lease.ReleaseBeforeCommit).
func (p *Permit) ReleaseBeforeCommit(ctx context.Context) error { return p.g.ReleaseBeforeCommit(ctx) }

// AcquireSemaphore blocks until this node holds one of the limit permits
// of the named semaphore, or ctx ends. Waiters are served first come,
// first served. The first acquire of a semaphore nobody holds or waits for
// fixes its limit; asking with another limit while it is in use fails with
// an error wrapping ErrSemaphoreLimit. A node may hold several permits of
// one semaphore (one per call). If this node's session ends while it
// waits, it asks again with its next session. If ctx ends while the
// request may have been committed, the request is given up in the
// background, so a cancelled call never leaves a permit held.
func (c *Coordinator) AcquireSemaphore(ctx context.Context, name string, limit int) (*Permit, error) {
	return c.acquireSem(ctx, name, limit, true)
}

// TryAcquireSemaphore takes a permit of the named semaphore if one is free
// and nobody waits, and otherwise returns an error wrapping
// ErrSemaphoreFull at once; while this node has no session, it fails at
// once with an error wrapping ErrNotReady, as TryAcquire does.
func (c *Coordinator) TryAcquireSemaphore(ctx context.Context, name string, limit int) (*Permit, error) {
	return c.acquireSem(ctx, name, limit, false)
}

// SemaphoreHolders returns the holders of the named semaphore's permits, in
// grant (token) order, from the local replica (which may lag the leader by
// a little); nil when nobody holds one.
func (c *Coordinator) SemaphoreHolders(name string) []Holder {
	return leases.SemHolders(c.fsm.View(), name, toHolder)
}

// Semaphore is SemaphoreHolders under its earlier name.
//
// Deprecated: use SemaphoreHolders, named for what it returns as Holder
// and Owner are.
func (c *Coordinator) Semaphore(name string) []Holder { return c.SemaphoreHolders(name) }

func (c *Coordinator) acquireSem(ctx context.Context, name string, limit int, wait bool) (*Permit, error) {
	if !wait {
		if err := c.sessionNow("TryAcquireSemaphore"); err != nil {
			return nil, err
		}
	}
	g, err := c.leases.Acquire(ctx, leases.Request{Kind: leases.Semaphore, Name: name, Limit: limit, Wait: wait})
	if err != nil {
		return nil, leases.SemError(err, ErrSemaphoreFull, ErrSemaphoreLimit)
	}
	return &Permit{belief: c.grantBelief(g), g: g}, nil
}

// SemaphoreInfo describes one semaphore in use, as a replica shows it.
type SemaphoreInfo struct {
	// Name is the semaphore's name; Limit its number of permits, fixed by
	// the first acquire while it was free.
	Name  string
	Limit int
	// Holders hold its permits, in grant (token) order.
	Holders []Holder
	// Waiters is the number of requests queued for a permit.
	Waiters int
}

// Semaphores lists every semaphore with a holder or a waiter from the
// local replica, sorted by name (see Semaphore for one name's holders).
func (c *Coordinator) Semaphores() []SemaphoreInfo {
	v := c.fsm.View()
	sems := v.Semaphores()
	out := make([]SemaphoreInfo, 0, len(sems))
	for _, s := range sems {
		out = append(out, SemaphoreInfo{Name: s.Name, Limit: int(s.Limit), Holders: leases.SemHolders(v, s.Name, toHolder),
			Waiters: len(s.Waiters)})
	}
	return out
}
