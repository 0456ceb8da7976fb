package leases

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// Result is what a committed acquire or release returned: the raft index
// it was applied at, the holder's token, session and answered request
// after an acquire, whether it queued the request (Queued) or found it
// given up or superseded (Stale).
type Result = wire.ApplyResult

// Proposer proposes commands to raft; *raftnode.Node satisfies it. Its
// methods must be safe for concurrent use.
type Proposer interface {
	// Commit commits cmd once (locally or forwarded to the leader) and
	// returns once it has committed; an error other than a refusal may
	// leave the outcome unknown.
	Commit(ctx context.Context, cmd fsm.Command) (Result, error)
	// Accept hands cmd to raft on the leader and returns once the leader
	// has taken it in, ahead of every command this node proposes or
	// forwards later, without waiting for the commit
	// (Grant.ReleaseBeforeCommit). wait, if not nil, delivers the commit's
	// outcome as Commit would; nil means nothing follows the commit and the
	// part watches its replica for it. After an error the command may or
	// may not have been taken in.
	Accept(ctx context.Context, cmd fsm.Command) (wait func(context.Context) (Result, error), err error)
}

// Options are the part's dependencies.
type Options struct {
	// View returns the local replica's current view (its Changed channel
	// is the change notification). Required.
	View func() *fsm.View
	// NextRequest waits for this node's current session and numbers a new
	// request on it; it fails without numbering anything once ctx has
	// ended. If nil, the part numbers requests itself on the sessions
	// Sessions awaits.
	NextRequest func(ctx context.Context) (*session.Session, uint64, error)
	// Sessions keeps this node in a session (*session.Client); its Await,
	// until Stop is closed, gives the session a request is numbered on
	// (used only when NextRequest is nil).
	Sessions interface {
		Await(ctx context.Context, stop <-chan struct{}) (*session.Session, error)
	}
	// Stop, once closed, ends the wait for a session (the node shuts
	// down).
	Stop <-chan struct{}
	// Proposer commits the part's commands; the part retries a commit
	// whose outcome is unknown itself (Retry). Required.
	Proposer Proposer
	// AskLeader asks the raft leader, over wire.MethodWaitGrant, for the
	// grant of a queued request (see ServeWait); it fails at once when this
	// node leads or no leader is known. Nil: a queued request watches the
	// local replica only.
	AskLeader func(ctx context.Context, r wire.WaitGrantRequest) (wire.WaitGrantReply, error)
	// AttemptTimeout bounds each settlement attempt.
	AttemptTimeout time.Duration
	// LeaderChanged returns a channel closed when raft next reports a
	// change of leader: a release submitted before its commit
	// (ReleaseBeforeCommit) whose commit has not been seen is then
	// delivered again at once (nil: after AttemptTimeout).
	LeaderChanged func() <-chan struct{}
	// Now reads the clock for the acquire-wait metric (nil: time.Now).
	Now func() time.Time
	// Log receives the part's logs (nil: discarded).
	Log *slog.Logger
	// Metrics are bound to the part by New (nil: none).
	Metrics *Metrics
}

// Manager holds this node's grants of leases and permits. All methods are
// safe for concurrent use.
type Manager struct {
	o      Options
	ctx    context.Context // ends at EndAll (or Close)
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{} // wakes the watch loop for a new grant
	served chan struct{} // one per ServeWait answering now
	// settling counts settlements in flight.
	settling atomic.Int64
	// settleHook, if set, is told of the settlements of failed acquires
	// and releases.
	settleHook atomic.Pointer[SettleHook]

	mu     sync.Mutex
	closed bool                // Close began: no new goroutine
	grants map[*Grant]struct{} // held grants; nil once EndAll ran
	slots  map[string]*slot    // one local contender per lease name
}

// New returns the part and starts its watch loop; Close stops it.
func New(o Options) *Manager {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NextRequest == nil {
		o.NextRequest = numbered(func(ctx context.Context) (*session.Session, error) { return o.Sessions.Await(ctx, o.Stop) })
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	p := &Manager{o: o, kick: make(chan struct{}, 1), served: make(chan struct{}, maxServedWaits), grants: map[*Grant]struct{}{}, slots: map[string]*slot{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	o.Metrics.bind(p)
	p.spawn(p.watchLoop)
	return p
}

// spawn runs f in a goroutine Close joins; it reports false (and does not
// run f) once Close has begun.
func (p *Manager) spawn(f func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
	return true
}

// EndAll ends every grant with cause, stops the watch loop and refuses
// new grants (an acquire then fails with wire.ErrShutdown, at once if it
// waits for its local slot). Settlements go on until Close.
func (p *Manager) EndAll(cause error) {
	p.cancel()
	p.mu.Lock()
	all := make([]*Grant, 0, len(p.grants))
	for g := range p.grants {
		all = append(all, g)
	}
	p.grants = nil
	p.mu.Unlock()
	for _, g := range all {
		g.end(cause)
	}
}

// Close ends every grant with wire.ErrShutdown, stops the watch loop and
// waits for it and for every settlement (which end with their session or
// once the proposer answers wire.ErrShutdown). It is safe to call twice.
func (p *Manager) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.EndAll(wire.ErrShutdown)
	p.wg.Wait()
}

// Held returns how many grants of kind this node holds now.
func (p *Manager) Held(kind Kind) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for g := range p.grants {
		if g.kind == kind {
			n++
		}
	}
	return n
}

// register adds g to the grants the watch loop checks; it reports false
// once EndAll has run.
func (p *Manager) register(g *Grant) bool {
	p.mu.Lock()
	if p.grants == nil {
		p.mu.Unlock()
		return false
	}
	p.grants[g] = struct{}{}
	p.mu.Unlock()
	context.AfterFunc(g.belief.Context(), func() { p.forget(g) })
	select {
	case p.kick <- struct{}{}:
	default:
	}
	return true
}

func (p *Manager) forget(g *Grant) {
	p.mu.Lock()
	delete(p.grants, g)
	p.mu.Unlock()
}

// watchLoop ends every grant the replica, at or past the index the grant
// was seen at, no longer shows with the same token (it was released, freed
// with an expired session, or granted to another session).
func (p *Manager) watchLoop() {
	for {
		v := p.o.View()
		p.mu.Lock()
		var lost []*Grant
		for g := range p.grants {
			if v.Index() < g.index {
				continue // this replica has not applied the grant yet
			}
			if token, ok := g.kind.granted(v, g.name, g.sess.ID(), g.req); !ok || token != g.token {
				lost = append(lost, g)
			}
		}
		p.mu.Unlock()
		for _, g := range lost {
			g.end(wire.ErrLeaseLost)
		}
		select {
		case <-p.ctx.Done():
			return
		case <-v.Changed():
		case <-p.kick:
		}
	}
}

// errSessionEnded: the session ended while its request waited, or before
// its grant was believed; the acquire asks again with the next session.
var errSessionEnded = errors.New("session ended while waiting")
