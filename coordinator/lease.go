package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leases"
	"github.com/holdfast-go/holdfast/internal/session"
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
// It does not hand the name over to a caller of this node waiting for it
// (Release does, in the release's own command), so that caller asks only
// after the release commits: when several callers of a node contend for a
// name, the name changes hands more slowly than with Release (see
// docs/BENCHMARKS.md, the 8-contender rows).
func (l *Lease) ReleaseBeforeCommit(ctx context.Context) error { return l.g.ReleaseBeforeCommit(ctx) }

// Holder returns who holds the named lease (node, address, session and
// the grant's token) from the local replica: no network, no lock, no
// allocation. ok is false when nobody holds it. The replica may lag the
// leader by a little, also behind this node's own Acquire, which returns on
// the leader's answer; call Sync first for an answer that reflects every
// change committed before the call.
func (c *Coordinator) Holder(name string) (h Holder, ok bool) {
	lh, ok := leases.HolderOf(c.fsm.View(), name)
	return toHolder(lh), ok
}

// Acquire blocks until this node holds the named lease, or ctx ends.
// Waiters are served first come, first served: a release hands the lease to
// the next waiter directly (to a waiting caller of the same node, the
// release and that caller's acquire are one commit; nodes waiting in the
// cluster keep their turn). If this node's session ends while it waits, it
// asks again with its next session. WithValue attaches a holder value to
// the grant.
func (c *Coordinator) Acquire(ctx context.Context, name string, opts ...AcquireOption) (*Lease, error) {
	return c.acquire(ctx, name, true, opts)
}

// TryAcquire takes the named lease if nobody holds it, and otherwise
// returns an error wrapping ErrLeaseHeld at once; while another caller of
// this node is asking for the name, it first waits for that caller's
// answer (a commit), so that it never reports held a name nobody holds. It
// does not wait for a session either: while this node has none (the
// cluster is not formed, no quorum), it fails at once with Ready's error,
// wrapping ErrNotReady.
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

// toHolder converts the engine's holder to the API's.
func toHolder(h leases.Holder) Holder {
	return Holder{Node: Node{Name: h.Node, ID: h.NodeID}, Addr: h.Addr, Session: h.Session, Token: h.Token, Value: h.Value}
}

// Holder is who holds something the cluster grants, as a replica shows
// it: a named lease (Holder, Leases, Observe), a semaphore permit
// (Semaphore) or a shard (Owner, ShardTable). Its Token is the fencing
// token of that grant. The zero Holder means nobody.
type Holder struct {
	// Node is the holding node.
	Node Node
	// Addr is where applications reach the holding node: its
	// Config.ServiceAddr, or its RPC address when that is empty.
	Addr string
	// Session is the holding node's session.
	Session string
	// Token is the fencing token of the grant.
	Token uint64
	// Value is the holder value of a lease's grant ("" for none, and for
	// permits and shards): what its holder attached with WithValue or
	// Lease.SetValue, such as the address where it serves.
	Value string
}

// MaxValueLength is the longest holder value, in bytes.
const MaxValueLength = fsm.MaxValueLength

// ErrInvalidValue is wrapped by the error of WithValue and Lease.SetValue
// for a holder value longer than MaxValueLength or not valid UTF-8.
var ErrInvalidValue = errors.New("holdfast: invalid holder value")

// An AcquireOption tunes Acquire and TryAcquire.
type AcquireOption interface{ apply(*acquireOpts) }

type acquireOpts struct {
	value string
	err   error
}

type optionFunc func(*acquireOpts)

func (f optionFunc) apply(o *acquireOpts) { f(o) }

// WithValue attaches value to the lease's grant: every replica shows it in
// the grant's Holder (Holder, Observe, Leases, the admin /v1/leases and
// holdfastctl leases), so that the holder can publish where it serves or
// what it runs, as etcd's Campaign value or Consul's lock value. A waiter's
// value is kept in the queue and shown once it is granted. At most
// MaxValueLength bytes of UTF-8; anything else fails the acquire with
// ErrInvalidValue before it is sent. Lease.SetValue changes it later.
func WithValue(value string) AcquireOption {
	return optionFunc(func(o *acquireOpts) {
		o.value = value
		o.err = checkValue(value)
	})
}

// acquireOptions applies opts.
func acquireOptions(opts []AcquireOption) (acquireOpts, error) {
	var o acquireOpts
	for _, opt := range opts {
		opt.apply(&o)
		if o.err != nil {
			return o, o.err
		}
	}
	return o, nil
}

// checkValue wraps a holder value's fault in ErrInvalidValue.
func checkValue(value string) error {
	switch {
	case len(value) > MaxValueLength:
		return fmt.Errorf("%w: %d bytes; at most %d", ErrInvalidValue, len(value), MaxValueLength)
	case fsm.CheckValue(value) != nil:
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidValue)
	}
	return nil
}

// Value returns the lease's holder value: the one WithValue gave the
// acquire, or the last one SetValue committed ("" for none).
func (l *Lease) Value() string { return l.g.Value() }

// SetValue changes the lease's holder value without a new grant: the
// token stays the same, and every replica then shows the new value with
// the holder (etcd's Proclaim). It returns once the change has committed,
// so a Sync then Holder on any node reads it. It fails with an error
// wrapping ErrLeaseLost once the lease has ended (this node's belief, or
// the cluster's state: another holder, a forced release), with
// ErrInvalidValue for a value that is too long or not UTF-8, or with ctx's
// error (the change may still commit; a later SetValue wins over it). Of
// concurrent calls, the one that numbered its change last wins.
func (l *Lease) SetValue(ctx context.Context, value string) error {
	if err := checkValue(value); err != nil {
		return err
	}
	return l.g.SetValue(ctx, value)
}

// sessionNow returns nil when this node holds a live session, and
// otherwise why not (Ready's error, wrapping ErrNotReady), naming call: a
// TryAcquire or TryAcquireSemaphore fails at once then, as its doc
// promises, instead of waiting for a session that may be minutes away (a
// cluster not formed yet, no quorum).
func (c *Coordinator) sessionNow(call string) error {
	if s, _ := c.currentSession(); s != nil {
		return nil
	}
	err := c.Ready()
	if err == nil {
		return nil // a session opened meanwhile
	}
	return fmt.Errorf("%w: %s does not wait for a session", err, call)
}

//go:generate go run ../internal/grantgen

// belief is what leases, shard leases and permits share: a token and
// a context that ends the moment this node stops believing it holds the
// grant. Lease, Permit and ShardLease each declare its exported methods
// with their own doc, in grantmethods_gen.go (written by
// internal/grantgen); the belief's timing lives in life.
type belief struct {
	token  uint64
	life   *session.Belief // and the session the grant was made to
	margin time.Duration   // Config.Session.LeaseMargin, for Checkpoint
}

// Token returns the fencing token of this grant: larger than every token
// granted before it for this lease name or shard, across leader changes and
// restarts.
func (b *belief) Token() uint64 { return b.token }

// Done returns a channel closed when the lease ends.
func (b *belief) Done() <-chan struct{} { return b.life.Context().Done() }

// Context returns a context cancelled when the lease ends; context.Cause
// says why (ErrReleased, ErrRevoked, ErrSessionExpired, ErrLeaseLost,
// ErrShutdown).
func (b *belief) Context() context.Context { return b.life.Context() }

// Err returns nil while the lease is held, then why it ended. It reads
// the clock, so a holder resumed from suspend sees the lease ended at once.
func (b *belief) Err() error {
	b.life.Observe()
	return b.life.Cause()
}

// Remaining returns how long this node may still believe it holds the
// lease if no further keepalive is answered (0 once it ended).
func (b *belief) Remaining() time.Duration { return b.life.Observe() }

// Checkpoint returns nil if the lease is held with at least the margin
// left. Call it before every side effect; it fails with an error wrapping
// ErrReleased ("lease released by this node") after this node's Release,
// ErrLeaseLost once the lease ended otherwise, or an *ExpiringError
// (ErrLeaseExpiring) that says how much time is left when less than the
// margin is.
func (b *belief) Checkpoint() error {
	r, err := b.life.Check()
	if err == nil && r < b.margin {
		return &ExpiringError{Remaining: r, Margin: b.margin}
	}
	return err
}

// endedAt returns when the belief ended by this node's own action, or the
// zero time (see session.Belief.EndedAt).
func (b *belief) endedAt() time.Time { return b.life.EndedAt() }

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
