package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/membership"
)

// Raft is what the part uses of the raft instance: what autopilot drives
// (configuration, AddVoter/AddNonvoter/DemoteVoter/RemoveServer, stats,
// leadership), the first bootstrap and the current term.
type Raft interface {
	autopilot.Raft
	BootstrapCluster(raft.Configuration) raft.Future
	CurrentTerm() uint64
}

// Members is what the part uses of the gossip member.
type Members interface {
	Members() []membership.Member
	Join(ctx context.Context, seeds []string) (int, error)
	SetMeta(ctx context.Context, meta membership.Meta) error
	Events() <-chan membership.Event
	Encrypted() bool
}

// Caller reaches other nodes over the RPC transport.
type Caller interface {
	// Call sends req to method at addr and decodes the answer into rep.
	Call(ctx context.Context, addr, method string, req, rep any) error
	// VerifyPeer checks, by a TLS handshake, that addr is the node named
	// name (see admission).
	VerifyPeer(ctx context.Context, addr, name string) error
}

// Heard is the leader's record of which nodes reach it over RPC (their
// keepalives, and their answers to autopilot's stats poll).
type Heard interface {
	// HeardWithin reports whether the node with raft ID id reached this
	// leader within d before now.
	HeardWithin(id string, d time.Duration, now time.Time) bool
	// NoteHeard records that the node with raft ID id reached this leader
	// at t.
	NoteHeard(id string, t time.Time)
}

// Options are the part's configuration and its narrow view of its
// neighbours. Every field without a stated default is required.
type Options struct {
	NodeName string
	ID       string // raft server ID of this node
	RPCAddr  string // the RPC address this node advertises
	Zone     string
	Tags     string   // placement tags, comma-separated (gossiped)
	Eligible bool     // voter-eligible: has a data dir
	Join     []string // gossip seeds

	Config               // the facade's Config.Cluster
	Shards               int
	SnapshotThreshold    uint64
	RPCTimeout           time.Duration
	HeartbeatTimeout     time.Duration // raft's
	CommitTimeout        time.Duration // raft's
	FormationLogInterval time.Duration // progress logged this often before the cluster forms
	TLS                  bool          // members must prove their identity before raft admits them
	RequireTLS           bool          // ... and plaintext members are refused

	Raft   Raft
	Caller Caller
	Heard  Heard
	// View returns the local replica's current state.
	View func() *fsm.View
	// ApplyLocal commits an encoded command on this node, which leads.
	ApplyLocal func(ctx context.Context, cmd []byte) error
	// Issue starts a raft request with mk and waits for its future or ctx.
	Issue func(ctx context.Context, mk func() raft.Future) error
	// Record keeps the cluster this node belongs to (its data dir); nil
	// keeps it in memory.
	Record Record
	// Metrics record the leader's autopilot verdict and read the voters
	// and members (nil: none).
	Metrics *Metrics
	// NewID returns a fresh random identifier (proposals, cluster IDs).
	NewID func() string
	// Now is the clock of the part's decisions; nil means time.Now.
	Now func() time.Time
	// Log receives the part's logs; nil discards them.
	Log *slog.Logger
	// Closing reports whether the node is closing (quiets autopilot's logs
	// at shutdown); nil means never.
	Closing func() bool
}

// Cluster forms and keeps the raft group of one node: it joins the gossip
// pool, bootstraps a new cluster, learns and gossips the cluster ID, and,
// while the node leads, admits members to raft and runs autopilot. Build it
// with New, attach gossip with Join, start its loops with Start, and end
// them with Close.
type Cluster struct {
	o       Options
	log     *slog.Logger
	members Members

	health   atomic.Pointer[receivedHealth]
	kick     chan struct{}
	admitted admission
	boot     *bootstrapper
	leaving  leaving                 // decommissions in progress, on the leader
	prom     *promoter               // autopilot's promoter (also plans leaves)
	judge    func() *autopilot.State // autopilot's latest state (nil before its first)

	pilotMu sync.Mutex
	pilot   *autopilot.Autopilot
	closed  bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds the part; it starts no goroutine.
func New(o Options) *Cluster {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Closing == nil {
		o.Closing = func() bool { return false }
	}
	if o.Record == nil {
		o.Record = &memRecord{}
	}
	cl := &Cluster{o: o, log: o.Log, kick: make(chan struct{}, 1)}
	cl.ctx, cl.cancel = context.WithCancel(context.Background())
	cl.boot = newBootstrapper(cl)
	cl.prom = newPromoter(cl)
	cl.pilot = newAutopilot(cl)
	cl.judge = cl.pilot.GetState
	return cl
}

// go runs f in a goroutine Close waits for.
func (cl *Cluster) goLoop(f func()) {
	cl.wg.Add(1)
	go func() {
		defer cl.wg.Done()
		f()
	}()
}

// Start runs the part's loops: member events, the cluster ID in gossip,
// formation progress logs, and the bootstrap loop when BootstrapExpect is
// set. Call it once, after Join.
func (cl *Cluster) Start() {
	cl.goLoop(cl.memberLoop)
	cl.goLoop(cl.clusterIDLoop)
	cl.goLoop(cl.formationLoop)
	if cl.o.BootstrapExpect > 0 {
		cl.goLoop(cl.boot.run)
	}
}

// Close stops autopilot for good and ends every goroutine of the part,
// waiting for them. A Lead running in the caller's goroutine returns once
// its context ends. Safe to call more than once.
func (cl *Cluster) Close() {
	cl.cancel()
	cl.pilotMu.Lock()
	cl.closed = true
	cl.pilotMu.Unlock()
	<-cl.pilot.Stop()
	cl.wg.Wait()
}

// ClusterID returns the ID of the cluster this node belongs to: the one
// its data dir recorded (from its bootstrap, or from its replica), or ""
// before it belongs to one.
func (cl *Cluster) ClusterID() string { return cl.o.Record.ID() }

// protocolVersion is gossiped in node metadata.
const protocolVersion = 1

// LocalMeta is what this node gossips about itself.
func (cl *Cluster) LocalMeta() membership.Meta {
	return membership.Meta{
		Version:   protocolVersion,
		NodeID:    cl.o.ID,
		RPCAddr:   cl.o.RPCAddr,
		Voter:     cl.o.Eligible,
		ClusterID: cl.ClusterID(),
		Zone:      cl.o.Zone,
		Tags:      cl.o.Tags,
		Fed:       cl.o.ReplicaFeed && !cl.o.Eligible,
	}
}

// Accept refuses gossip members that belong to another cluster (a
// *ForeignClusterError) or speak another protocol version
// (membership.Config.Accept). A node's cluster is known from its first
// gossip message on, since its data dir records it.
func (cl *Cluster) Accept(m membership.Member) error {
	ours := cl.ClusterID()
	if ours != "" && m.Meta.ClusterID != "" && m.Meta.ClusterID != ours {
		cl.log.Warn("refusing member of a foreign cluster", "member", m.Name, "foreign_cluster", m.Meta.ClusterID, "cluster", ours)
		return &ForeignClusterError{Ours: ours, Theirs: m.Meta.ClusterID, Member: m.Name}
	}
	if m.Meta.Version != protocolVersion {
		return fmt.Errorf("member %s speaks protocol %d, not %d", m.Name, m.Meta.Version, protocolVersion)
	}
	return nil
}

// servers returns the current raft configuration, or nil when it cannot be
// read (shutting down).
func (cl *Cluster) servers() []raft.Server {
	f := cl.o.Raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return f.Configuration().Servers
}

// hasRaftState reports whether this node has ever been part of a raft
// configuration (bootstrapped, or replicated to).
func (cl *Cluster) hasRaftState() bool {
	if cl.o.Raft.LastIndex() > 0 {
		return true
	}
	f := cl.o.Raft.GetConfiguration()
	return f.Error() == nil && len(f.Configuration().Servers) > 0
}

// ShutdownSteps is what a graceful shutdown may do (ShutdownPlan).
type ShutdownSteps struct {
	// Quorum: the voters gossip shows alive, this node included, form a
	// quorum of the configuration, so the shutdown's handoffs and session
	// close can commit; without one they are skipped (as a crash would).
	Quorum bool
	// Transfer: this node leads and another voter is alive: hand
	// leadership over first.
	Transfer bool
	// RemoveSelf: this node is a non-voter, which takes itself out of the
	// configuration (it holds no vote; the leader adds it back when it
	// returns). A voter keeps its place: it votes again the moment it
	// restarts, and one that never returns is replaced under the
	// promoter's dead-voter rule. Taking a voter out for good is Leave's.
	RemoveSelf bool
}

// ShutdownPlan says what a graceful shutdown does (ShutdownSteps).
func (cl *Cluster) ShutdownPlan() ShutdownSteps {
	if cl.members == nil {
		return ShutdownSteps{}
	}
	live := map[string]bool{}
	for _, m := range cl.members.Members() {
		if m.State == membership.Alive {
			live[m.Meta.NodeID] = true
		}
	}
	var st ShutdownSteps
	voters, alive, others, inConfig := 0, 0, 0, false
	for _, s := range cl.servers() {
		self := string(s.ID) == cl.o.ID
		if self {
			inConfig, st.RemoveSelf = true, s.Suffrage != raft.Voter
		}
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if self || live[string(s.ID)] {
			alive++
		}
		if !self && live[string(s.ID)] {
			others++
		}
	}
	st.Quorum = voters > 0 && alive >= voters/2+1
	st.Transfer = cl.o.Raft.State() == raft.Leader && others > 0
	st.RemoveSelf = st.RemoveSelf && inConfig
	return st
}
