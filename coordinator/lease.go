package coordinator

import (
	"context"

	"github.com/holdfast-go/holdfast/internal/leases"
)

// Lease is a named lease held by this node (one holder per name). Its context is
// cancelled the moment this node's belief in the lease ends: at the
// holder-side deadline of its session (even if no message arrives), when
// the lease goes to another holder, on Release, or on Shutdown. Work done
// under the lease should run under Context() and pass Token() to every
// protected resource.
type Lease struct {
	belief // a copy of the grant's (they share its life)
	g      *leases.Grant
}

// Name returns the lease's name.
func (l *Lease) Name() string { return l.g.Name() }

// Release ends the lease: its context is cancelled at once, and Release
// returns once the release has committed, so afterwards every node's Sync
// then Holder, and every node's Acquire or TryAcquire, finds the name
// released or held by the next waiter (as after etcd's Unlock). If ctx
// ends first, Release returns ctx's error and the release is still
// delivered in the background. It returns nil if the lease had already
// ended.
func (l *Lease) Release(ctx context.Context) error { return l.g.Release(ctx) }

// ReleaseBeforeCommit ends the lease as Release does but returns earlier:
// as soon as raft on the leader has taken the release in, before it
// commits (about one disk write and one round trip sooner with three
// voters). What it guarantees is only the order of this node's own
// requests: this node's next Acquire of the name comes after the release.
// It does not guarantee what Release does: once it returns, other nodes may
// still see the lease held (a Sync then Holder, their TryAcquire), and if
// the leader loses office before the commit, the release is lost with it
// and delivered again (as soon as this node learns of the new leader), so
// others see the name free only later. The lease never has two holders
// either way: the next holder is granted only once the release commits.
func (l *Lease) ReleaseBeforeCommit(ctx context.Context) error { return l.g.ReleaseBeforeCommit(ctx) }

// Holder returns who holds the named lease (node, address, session and
// the grant's token) from the local replica: no network, no lock, no
// allocation. ok is false when nobody holds it. The replica may lag the
// leader by a little, also behind this node's own Acquire, which returns on
// the leader's answer; call Sync first for an answer that reflects every
// change committed before the call.
func (c *Coordinator) Holder(name string) (h Holder, ok bool) {
	lh, ok := leases.HolderOf(c.fsm.View(), name)
	return Holder(lh), ok
}

// Acquire blocks until this node holds the named lease, or ctx ends.
// Waiters are served first come, first served: a release hands the lease to
// the next waiter directly. If this node's session ends while it waits, it
// asks again with its next session. WithValue attaches a holder value to
// the grant.
func (c *Coordinator) Acquire(ctx context.Context, name string, opts ...AcquireOption) (*Lease, error) {
	return c.acquire(ctx, name, true, opts)
}

// TryAcquire takes the named lease if nobody holds it, and otherwise
// returns an error wrapping ErrLeaseHeld at once. It does not wait for a
// session either: while this node has none (the cluster is not formed, no
// quorum), it fails at once with Ready's error, wrapping ErrNotReady.
func (c *Coordinator) TryAcquire(ctx context.Context, name string, opts ...AcquireOption) (*Lease, error) {
	return c.acquire(ctx, name, false, opts)
}

func (c *Coordinator) acquire(ctx context.Context, name string, wait bool, opts []AcquireOption) (*Lease, error) {
	o, err := acquireOptions(opts)
	if err != nil {
		return nil, err
	}
	if !wait {
		if err := c.sessionNow("TryAcquire"); err != nil {
			return nil, err
		}
	}
	g, err := c.leases.Acquire(ctx, leases.Request{Kind: leases.Lease, Name: name, Wait: wait, Value: o.value})
	if err != nil {
		return nil, err
	}
	return &Lease{belief: c.grantBelief(g), g: g}, nil
}

// WatchHolder streams Holder(name), the holder of the named lease: the
// current one first, then every change (a zero Holder when nobody holds
// it; a holder's new Value is a change too). Changes may be coalesced, but
// the latest is never dropped. The channel closes when ctx ends or the node
// shuts down.
func (c *Coordinator) WatchHolder(ctx context.Context, name string) <-chan Holder {
	return observe(c, ctx, name, toHolder)
}

// Observe is WatchHolder under its earlier name (etcd's).
//
// Deprecated: use WatchHolder, named like every watch for the read it
// streams.
func (c *Coordinator) Observe(ctx context.Context, name string) <-chan Holder {
	return c.WatchHolder(ctx, name)
}

// observe streams the holders of the lease name, converted by conv, from a
// goroutine Shutdown and Close join.
func observe[T any](c *Coordinator, ctx context.Context, name string, conv func(leases.Holder) T) <-chan T {
	ch := make(chan T, 1)
	if !c.spawn(func() { leases.Observe(ctx, c.ctx.Done(), c.fsm.View, name, ch, conv) }) {
		close(ch)
	}
	return ch
}

func toHolder(h leases.Holder) Holder { return Holder(h) }
