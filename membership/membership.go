package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// ErrDuplicateName is wrapped by the error of a Join that would bring a node
// with our name but at another address into the pool, and it is the reason
// logged when such a node is refused.
var ErrDuplicateName = errors.New("membership: duplicate node name")

// ErrClosed is returned by calls made after Shutdown.
var ErrClosed = errors.New("membership: shut down")

// defaultUpdateTimeout bounds SetMeta and Leave when their context has no
// deadline.
const defaultUpdateTimeout = 5 * time.Second

// Membership is this node's view of the gossip pool. All methods are safe
// for concurrent use.
type Membership struct {
	cfg    Config
	logger *slog.Logger
	ml     *memberlist.Memberlist
	bcast  *memberlist.TransmitLimitedQueue
	events *eventQueue
	gossip time.Duration // memberlist's GossipInterval
	done   chan struct{} // closed by Shutdown

	keyring *memberlist.Keyring // nil without encryption
	keyMu   sync.Mutex          // serialises keyring changes (see keyring.go)

	mu        sync.Mutex // guards the fields below; never held while calling memberlist
	localAddr string
	metaBytes []byte
	members   map[string]*entry
	alive     atomic.Int64 // alive members, self included; read without mu

	joining   atomic.Int32 // Joins in progress
	refusalMu sync.Mutex
	refusal   error // last merge refusal seen while joining

	lifeMu   sync.Mutex // guards closed and wg.Add
	closed   bool
	wg       sync.WaitGroup
	leaveMu  sync.Mutex // serialises Leave
	left     bool
	leaveErr error
	stopOnce sync.Once
	stopErr  error
}

// entry is a row of the members table.
type entry struct {
	member  Member
	leaving bool   // a leave notice arrived: the next NotifyLeave means Left
	rawMeta []byte // the encoded form of member.Meta, as gossiped
}

// New validates cfg and starts the local gossip node. It does not contact
// any other node: call Join for that. The first event is a Join for the
// local node.
func New(cfg Config) (*Membership, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.ReapAfter == 0 {
		cfg.ReapAfter = DefaultReapAfter
	}
	if cfg.Meta.Version == 0 {
		cfg.Meta.Version = MetaVersion
	}
	metaBytes, _ := cfg.Meta.Encode() // validated
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	keyring, err := newKeyring(cfg.Keys)
	if err != nil {
		return nil, fmt.Errorf("membership: Config.Keys: %w", err)
	}
	cfg.Keys = nil // the keyring holds copies; the caller's slices are not kept
	m := &Membership{
		cfg:       cfg,
		logger:    logger,
		keyring:   keyring,
		events:    newEventQueue(),
		done:      make(chan struct{}),
		metaBytes: metaBytes,
		members:   make(map[string]*entry),
	}
	d := &delegate{m: m}
	mc := memberlistConfig(&cfg, d, keyring, logger)
	m.gossip = mc.GossipInterval
	m.bcast = &memberlist.TransmitLimitedQueue{
		NumNodes:       func() int { return int(m.alive.Load()) },
		RetransmitMult: mc.RetransmitMult,
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("membership: start gossip: %w", err)
	}
	m.ml = ml
	// Read the address before taking m.mu: memberlist calls the delegate
	// (which takes m.mu) while holding its node lock, which LocalNode needs.
	addr := ml.LocalNode().Address()
	m.mu.Lock()
	m.localAddr = addr
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.events.run(m.done)
	}()
	if every := cfg.reconnectInterval(); every > 0 {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.reconnectLoop(every)
		}()
	}
	return m, nil
}

// Join contacts the seeds ("host:port") and merges their view of the pool.
// A seed whose host is a DNS name stands for every address the name
// resolves to (Config.LookupHost), and Join contacts each of them; this
// node's own address is skipped. It returns how many addresses were
// reached. It fails if none was (or every seed is this node), and with an
// error wrapping ErrDuplicateName if the pool already has a node with our
// name at another address. When ctx ends first, Join returns ctx.Err() and
// the attempt finishes in the background.
func (m *Membership) Join(ctx context.Context, seeds []string) (int, error) {
	if len(seeds) == 0 {
		return 0, errors.New("membership: join: no seeds")
	}
	addrs, err := m.resolveSeeds(ctx, seeds)
	if err != nil {
		return 0, fmt.Errorf("membership: join %s: %w", strings.Join(seeds, ","), err)
	}
	type result struct {
		n   int
		err error
	}
	ch := make(chan result, 1)
	if !m.goTracked(func() {
		m.joining.Add(1)
		defer m.joining.Add(-1)
		n, err := m.ml.Join(addrs)
		ch <- result{n, err}
	}) {
		return 0, ErrClosed
	}
	select {
	case r := <-ch:
		if r.err == nil {
			return r.n, nil
		}
		if refusal := m.takeRefusal(); refusal != nil {
			return r.n, fmt.Errorf("membership: join %s: %w", strings.Join(seeds, ","), refusal)
		}
		return r.n, fmt.Errorf("membership: join %s: %w", strings.Join(seeds, ","), r.err)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// goTracked runs f in a goroutine that Shutdown waits for; it reports false
// (and does not run f) after Shutdown.
func (m *Membership) goTracked(f func()) bool {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	if m.closed {
		return false
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
	return true
}

// noteRefusal records why a join merge was cancelled, for Join to report.
func (m *Membership) noteRefusal(err error) {
	if m.joining.Load() == 0 {
		return
	}
	m.refusalMu.Lock()
	m.refusal = err
	m.refusalMu.Unlock()
}

func (m *Membership) takeRefusal() error {
	m.refusalMu.Lock()
	defer m.refusalMu.Unlock()
	err := m.refusal
	m.refusal = nil
	return err
}

// Events returns the stream of membership changes, in the order they were
// observed. Delivery never blocks gossip: events wait in an unbounded queue
// until read. The channel is closed by Shutdown; queued events are dropped.
func (m *Membership) Events() <-chan Event {
	return m.events.out
}

// Members returns every node seen, sorted by name, including the local node
// and Failed or Left nodes until they are reaped (Config.ReapAfter).
func (m *Membership) Members() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Member, 0, len(m.members))
	for _, e := range m.members {
		out = append(out, e.member)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Member returns the member with the given name, if it is known.
func (m *Membership) Member(name string) (Member, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.members[name]
	if !ok {
		return Member{}, false
	}
	return e.member, true
}

// Local returns the local node as a member.
func (m *Membership) Local() Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.members[m.cfg.NodeName]; ok {
		return e.member
	}
	meta, _ := DecodeMeta(m.metaBytes)
	return Member{Name: m.cfg.NodeName, Addr: m.localAddr, Meta: meta}
}

// Addr returns the gossip address other nodes use to reach this one (with
// the actual port when Config.BindAddr had port 0).
func (m *Membership) Addr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.localAddr
}

// SetMeta replaces the local metadata and gossips it. It waits until the
// update has been sent to at least one other node (if any), until ctx ends,
// or, without a deadline, for at most 5 seconds; on timeout the new Meta is
// still in effect locally and spreads later. A zero Version becomes
// MetaVersion.
func (m *Membership) SetMeta(ctx context.Context, meta Meta) error {
	if meta.Version == 0 {
		meta.Version = MetaVersion
	}
	b, err := meta.Encode()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.isClosed() {
		return ErrClosed
	}
	m.mu.Lock()
	m.metaBytes = b
	m.mu.Unlock()
	// memberlist drops an update whose incarnation a concurrent refutation
	// (another node suspected this one: common under load) has already
	// passed, and then never signals its broadcast; the refutation carries
	// the old meta. So each attempt is bounded, and an update that did not
	// get out is sent again, with a newer incarnation, until the deadline.
	deadline := time.Now().Add(timeoutOf(ctx))
	for {
		err := m.ml.UpdateNode(min(time.Until(deadline), updateAttempt))
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || time.Until(deadline) <= 0 || m.isClosed() {
			return fmt.Errorf("membership: set meta: %w", err)
		}
		m.logger.Debug("meta update not broadcast yet; sending it again", "error", err)
	}
}

// updateAttempt bounds one attempt of SetMeta to broadcast the update.
const updateAttempt = 2 * time.Second

// timeoutOf returns the time left before ctx's deadline, or the default.
func timeoutOf(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl), time.Millisecond)
	}
	return defaultUpdateTimeout
}

func (m *Membership) isClosed() bool {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	return m.closed
}

// Leave leaves the pool gracefully: other nodes see this node as Left (an
// Event of kind Leave) rather than Failed. It first gossips a leave notice,
// then memberlist's leave message, each bounded by ctx (or 5 seconds without
// a deadline). It is idempotent; later calls return the first result. A node
// cannot rejoin after Leave: call Shutdown and start a new Membership.
func (m *Membership) Leave(ctx context.Context) error {
	m.leaveMu.Lock()
	defer m.leaveMu.Unlock()
	if m.left {
		return m.leaveErr
	}
	if m.isClosed() {
		return ErrClosed
	}
	m.left = true
	m.leaveErr = m.leave(ctx)
	return m.leaveErr
}

func (m *Membership) leave(ctx context.Context) error {
	m.mu.Lock()
	self, ok := m.members[m.cfg.NodeName]
	if ok {
		self.leaving = true
	}
	addr := m.localAddr
	m.mu.Unlock()
	if m.alive.Load() > 1 {
		sent := m.broadcastLeave(m.cfg.NodeName, addr)
		wait := min(timeoutOf(ctx), 20*m.gossip)
		timer := time.NewTimer(wait)
		select {
		case <-sent:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	if err := m.ml.Leave(timeoutOf(ctx)); err != nil {
		return fmt.Errorf("membership: leave: %w", err)
	}
	return nil
}

// Shutdown stops gossip without telling other nodes (they will report this
// node Failed unless Leave was called), waits for the package's goroutines
// and closes the Events channel. It is idempotent.
func (m *Membership) Shutdown() error {
	m.stopOnce.Do(func() {
		m.lifeMu.Lock()
		m.closed = true
		m.lifeMu.Unlock()
		if err := m.ml.Shutdown(); err != nil {
			m.stopErr = fmt.Errorf("membership: shutdown: %w", err)
		}
		close(m.done)
		m.wg.Wait()
	})
	return m.stopErr
}
