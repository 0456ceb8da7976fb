package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leaktest"
	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m, 5*time.Second) }

// future is an answered raft future.
type future struct {
	err  error
	conf raft.Configuration
}

func (f future) Error() error                      { return f.err }
func (f future) Index() uint64                     { return 1 }
func (f future) Configuration() raft.Configuration { return f.conf }

// fakeRaft is a raft configuration that changes when told to, recording
// every change.
type fakeRaft struct {
	mu           sync.Mutex
	state        raft.RaftState
	term         uint64
	servers      []raft.Server
	bootstrapped []raft.Configuration // every BootstrapCluster that took
	added        []raft.ServerID      // AddNonvoter calls
	promoted     []raft.ServerID      // AddVoter calls
	leader       raft.ServerAddress   // Leader() on a follower
	removed      []raft.ServerID      // RemoveServer calls
}

func (r *fakeRaft) AddNonvoter(id raft.ServerID, addr raft.ServerAddress, _ uint64, _ time.Duration) raft.IndexFuture {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.added = append(r.added, id)
	r.put(raft.Server{ID: id, Address: addr, Suffrage: raft.Nonvoter})
	return future{}
}

func (r *fakeRaft) AddVoter(id raft.ServerID, addr raft.ServerAddress, _ uint64, _ time.Duration) raft.IndexFuture {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.promoted = append(r.promoted, id)
	r.put(raft.Server{ID: id, Address: addr, Suffrage: raft.Voter})
	return future{}
}

// put adds s, or changes the server with its ID as raft does: a new
// address, and the suffrage raised to voter (AddNonvoter never demotes).
func (r *fakeRaft) put(s raft.Server) {
	for i, cur := range r.servers {
		if cur.ID == s.ID {
			r.servers[i].Address = s.Address
			if s.Suffrage == raft.Voter {
				r.servers[i].Suffrage = raft.Voter
			}
			return
		}
	}
	r.servers = append(r.servers, s)
}

func (r *fakeRaft) DemoteVoter(raft.ServerID, uint64, time.Duration) raft.IndexFuture {
	return future{err: errors.New("fakeRaft: demote not modelled")}
}

func (r *fakeRaft) LastIndex() uint64 { return 0 }

func (r *fakeRaft) Leader() raft.ServerAddress {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == raft.Leader {
		return "self"
	}
	return r.leader
}

func (r *fakeRaft) GetConfiguration() raft.ConfigurationFuture {
	r.mu.Lock()
	defer r.mu.Unlock()
	return future{conf: raft.Configuration{Servers: append([]raft.Server(nil), r.servers...)}}
}

func (r *fakeRaft) RemoveServer(id raft.ServerID, _ uint64, _ time.Duration) raft.IndexFuture {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = append(r.removed, id)
	for i, s := range r.servers {
		if s.ID == id {
			r.servers = append(r.servers[:i], r.servers[i+1:]...)
			break
		}
	}
	return future{}
}

func (r *fakeRaft) Stats() map[string]string {
	return map[string]string{"last_contact": "0", "last_log_index": "7", "last_log_term": "1"}
}

func (r *fakeRaft) LeadershipTransferToServer(raft.ServerID, raft.ServerAddress) raft.Future {
	return future{err: errors.New("fakeRaft: transfer not modelled")}
}

func (r *fakeRaft) State() raft.RaftState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// BootstrapCluster takes only on a node without a configuration, as raft's
// does.
func (r *fakeRaft) BootstrapCluster(conf raft.Configuration) raft.Future {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.servers) > 0 {
		return future{err: raft.ErrCantBootstrap}
	}
	r.servers = append([]raft.Server(nil), conf.Servers...)
	r.bootstrapped = append(r.bootstrapped, conf)
	return future{}
}

func (r *fakeRaft) CurrentTerm() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.term
}

// fakeMembers is a gossip member whose view is set by the test.
type fakeMembers struct {
	mu      sync.Mutex
	members []membership.Member
	joinErr error
	events  chan membership.Event
	meta    membership.Meta // the last SetMeta
}

func (m *fakeMembers) Members() []membership.Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]membership.Member(nil), m.members...)
}

func (m *fakeMembers) set(ms ...membership.Member) {
	m.mu.Lock()
	m.members = ms
	m.mu.Unlock()
}

func (m *fakeMembers) Join(context.Context, []string) (int, error) { return 0, m.joinErr }
func (m *fakeMembers) SetMeta(_ context.Context, meta membership.Meta) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.meta = meta
	return nil
}

func (m *fakeMembers) lastMeta() membership.Meta {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.meta
}
func (m *fakeMembers) Events() <-chan membership.Event { return m.events }
func (m *fakeMembers) Encrypted() bool                 { return false }

// addrOf is node name's RPC address on the fake network.
func addrOf(name string) string { return name + ":7000" }

// member is a gossip member of name with raft ID id-<name>, reachable at
// addrOf(name) on the fake network.
func member(name string, state membership.State, voter bool, clusterID string) membership.Member {
	return membership.Member{Name: name, State: state, Meta: membership.Meta{Version: protocolVersion,
		NodeID: "id-" + name, RPCAddr: addrOf(name), Voter: voter, ClusterID: clusterID}}
}

// fakeNet delivers RPCs between parts by address, encoding and decoding
// as the transport does. Before each call it runs onCall, if set.
type fakeNet struct {
	mu     sync.Mutex
	nodes  map[string]*Cluster
	down   map[string]bool
	verify map[string]error // VerifyPeer's answer by address
	// oldRelease marks the addresses of nodes of a release without the
	// identity method.
	oldRelease map[string]bool
	onCall     func(addr, method string)
	calls      []string // method@addr, in order
}

func newFakeNet() *fakeNet {
	return &fakeNet{nodes: map[string]*Cluster{}, down: map[string]bool{}, verify: map[string]error{}}
}

func (n *fakeNet) Call(ctx context.Context, addr, method string, req, rep any) error {
	n.mu.Lock()
	target, down, onCall, old := n.nodes[addr], n.down[addr], n.onCall, n.oldRelease[addr]
	n.calls = append(n.calls, method+"@"+addr)
	n.mu.Unlock()
	if onCall != nil {
		onCall(addr, method)
	}
	if target == nil || down {
		return errors.New("fakeNet: no answer from " + addr)
	}
	if old && method == wire.MethodIdentity {
		return &transport.RemoteError{Code: wire.CodeBadMethod, Message: "unknown method"}
	}
	body, err := transport.Encode(req)
	if err != nil {
		return err
	}
	var out []byte
	switch method {
	case wire.MethodStats:
		out, err = target.ServeStats(body)
	case wire.MethodLeave:
		var req wire.LeaveRequest
		if err := transport.Decode(body, &req); err != nil {
			return err
		}
		var lr wire.LeaveReply
		if lr, err = target.ServeLeave(ctx, req); err == nil {
			out, err = transport.Encode(lr)
		}
		err = wire.FromRemote(wire.ToRemote(err))
	case wire.MethodIdentity:
		out, err = target.ServeIdentity()
	default:
		out, err = target.ServeBootstrap(method, body)
	}
	if err != nil || rep == nil {
		return err
	}
	return transport.Decode(out, rep)
}

func (n *fakeNet) VerifyPeer(_ context.Context, addr, _ string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.verify[addr]
}

// fakeHeard is the leader's record of nodes heard, set by the test.
type fakeHeard struct {
	mu    sync.Mutex
	heard map[string]time.Time
}

func (h *fakeHeard) HeardWithin(id string, d time.Duration, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.heard[id]
	return ok && now.Sub(t) < d
}

func (h *fakeHeard) NoteHeard(id string, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.heard == nil {
		h.heard = map[string]time.Time{}
	}
	h.heard[id] = t
}

// testNode is one part over fakes.
type testNode struct {
	*Cluster
	raft    *fakeRaft
	members *fakeMembers
	heard   *fakeHeard
}

// newTestNode builds the part of node name (raft ID id-<name>) on net,
// with the given clock; edit adjusts the options. Close is registered.
func newTestNode(t *testing.T, name string, net *fakeNet, clk *testkit.Clock, edit func(*Options)) *testNode {
	t.Helper()
	n := &testNode{raft: &fakeRaft{state: raft.Follower}, members: &fakeMembers{events: make(chan membership.Event)}, heard: &fakeHeard{}}
	f := fsm.New()
	ids := 0
	o := Options{
		NodeName: name, ID: "id-" + name, RPCAddr: addrOf(name), Eligible: true,
		Config: Config{Voters: 3, BootstrapExpect: 3, ServerStabilization: testStable, DeadServerStabilization: testDead,
			ReconcileInterval: time.Hour, BootstrapPromiseTTL: 10 * time.Second},
		Shards: 8, RPCTimeout: time.Second,
		HeartbeatTimeout: time.Hour, CommitTimeout: time.Millisecond,
		Raft: n.raft, Caller: net, Heard: n.heard, View: f.View,
		ApplyLocal: func(context.Context, []byte) error { return errors.New("no raft here") },
		Issue:      func(_ context.Context, mk func() raft.Future) error { return mk().Error() },
		NewID: func() string {
			ids++
			return name + "-" + string(rune('0'+ids))
		},
		Now: clk.Time,
	}
	if edit != nil {
		edit(&o)
	}
	n.Cluster = New(o)
	n.Cluster.members = n.members
	net.mu.Lock()
	net.nodes[addrOf(name)] = n.Cluster
	net.mu.Unlock()
	t.Cleanup(n.Close)
	return n
}
