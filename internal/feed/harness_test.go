package feed

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/transport"
)

// group stands for a raft group: servers whose logs hold the same
// committed commands, each applied to the server's own FSM when the test
// says so.
type group struct {
	t       *testing.T
	mu      sync.Mutex
	servers []*testServer
	next    uint64 // the next raft index
	leader  string
}

type testServer struct {
	id      string
	logs    *raft.InmemStore
	replica *fsm.FSM
	srv     *Server
	tr      *transport.Transport
	netw    transport.Network
	serving bool
}

func newGroup(t *testing.T) *group { return &group{t: t, next: 1} }

// addServer starts a server on netw (nil: TCP) at bind.
func (g *group) addServer(id string, netw transport.Network, bind string, chunk int) *testServer {
	s := &testServer{id: id, logs: raft.NewInmemStore(), replica: fsm.New(), netw: netw, serving: true}
	s.srv = NewServer(ServerOptions{
		Replica: s.replica,
		Logs:    s.logs,
		Serving: func() bool { g.mu.Lock(); defer g.mu.Unlock(); return s.serving },
		Leader: func() (string, string) {
			g.mu.Lock()
			defer g.mu.Unlock()
			return "leader-addr", g.leader
		},
		MaxWait: 200 * time.Millisecond,
		Chunk:   chunk,
	})
	s.tr = startTransport(g.t, id, netw, bind, s.srv)
	g.mu.Lock()
	g.servers = append(g.servers, s)
	g.mu.Unlock()
	return s
}

// restart brings s back on a new transport at the same address.
func (g *group) restart(s *testServer) {
	addr := s.tr.Addr()
	if err := s.tr.Close(); err != nil {
		g.t.Fatal(err)
	}
	s.tr = startTransport(g.t, s.id, s.netw, addr, s.srv)
}

func startTransport(t *testing.T, id string, netw transport.Network, bind string, s *Server) *transport.Transport {
	t.Helper()
	h := transport.HandlerFunc(func(ctx context.Context, method string, body []byte) ([]byte, error) {
		var req PullRequest
		if err := transport.Decode(body, &req); err != nil {
			return nil, err
		}
		rep, err := s.Serve(ctx, req)
		if err != nil {
			return nil, err
		}
		return transport.Encode(rep)
	})
	if bind == "" {
		bind = "127.0.0.1:0"
	}
	tr, err := transport.New(transport.Config{Network: netw, BindAddr: bind, LocalID: id, Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// commit appends cmd at the next index to every server's log and applies
// it on the servers in apply.
func (g *group) commit(cmd []byte, apply ...*testServer) uint64 {
	g.mu.Lock()
	i := g.next
	g.next++
	g.mu.Unlock()
	l := &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: cmd}
	for _, s := range g.servers {
		if err := s.logs.StoreLog(l); err != nil {
			g.t.Fatal(err)
		}
	}
	for _, s := range apply {
		s.replica.Apply(l)
	}
	return i
}

// catchUp applies on s every logged entry past its index.
func (g *group) catchUp(s *testServer) {
	last, _ := s.logs.LastIndex()
	for i := s.replica.View().Index() + 1; i <= last; i++ {
		var l raft.Log
		if err := s.logs.GetLog(i, &l); err == nil {
			s.replica.Apply(&l)
		}
	}
}

func (g *group) peers() []Peer {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Peer
	for _, s := range g.servers {
		out = append(out, Peer{ID: s.id, Addr: s.tr.Addr()})
	}
	return out
}

func sessionCmd(t testing.TB, i int) []byte {
	b, err := fsm.Encode(fsm.Command{Op: fsm.OpSessionCreate, Session: &fsm.SessionCmd{
		ID: fmt.Sprintf("s%d", i), Node: fmt.Sprintf("n%d", i), TTLNanos: int64(time.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func initCmd(t testing.TB) []byte {
	b, err := fsm.Encode(fsm.Command{Op: fsm.OpInitCluster, Init: &fsm.InitCluster{ClusterID: "c1", Shards: 64, Voters: 3, CreatedBy: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replica is a fed FSM with a watcher that fails the test if its index
// ever goes backwards.
type replica struct {
	fsm    *fsm.FSM
	client *Client
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	back   string
}

func startReplica(t *testing.T, name string, netw transport.Network, bind string, servers func() []Peer) *replica {
	t.Helper()
	if bind == "" {
		bind = "127.0.0.1:0"
	}
	tr, err := transport.New(transport.Config{Network: netw, BindAddr: bind, LocalID: name})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{fsm: fsm.New()}
	r.client = NewClient(ClientOptions{Name: name, Replica: r.fsm, Servers: servers, Call: tr.Call,
		Leader: func(string, string) {}, MaxWait: 200 * time.Millisecond, RPCTimeout: time.Second, Retry: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Add(2)
	go func() { defer r.wg.Done(); r.client.Run(ctx) }()
	go func() { defer r.wg.Done(); r.watch(ctx) }()
	t.Cleanup(func() {
		r.cancel()
		r.wg.Wait()
		tr.Close()
		if r.back != "" {
			t.Error(r.back)
		}
	})
	return r
}

func (r *replica) watch(ctx context.Context) {
	v := r.fsm.View()
	for {
		select {
		case <-ctx.Done():
			return
		case <-v.Changed():
		}
		n := r.fsm.View()
		if n.Index() < v.Index() {
			r.mu.Lock()
			r.back = fmt.Sprintf("replica went back from %d to %d", v.Index(), n.Index())
			r.mu.Unlock()
		}
		v = n
	}
}

// waitSame waits until r's state encodes exactly as s's.
func waitSame(t *testing.T, r *replica, s *testServer) {
	t.Helper()
	testkit.Eventually(t, "the replica at the server's state", 20*time.Second, func() error {
		a, _ := r.fsm.EncodeSnapshot()
		b, _ := s.replica.EncodeSnapshot()
		if bytes.Equal(a, b) && r.fsm.View().Index() == s.replica.View().Index() {
			return nil
		}
		return fmt.Errorf("replica at %d, server %s at %d: not the same state", r.fsm.View().Index(), s.id, s.replica.View().Index())
	})
}
