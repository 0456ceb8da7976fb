package raftnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// errUnverified answers raft traffic from a server this node has not yet
// placed in its cluster: the sender's raft retries it, and by then the
// guard knows.
var errUnverified = errors.New("holdfast: raft sender not verified to belong to this node's cluster yet")

// Guard intervals: how long a refusal stands before the sender is asked
// again (a node of another cluster may have left it since), and the
// bound on the verdicts kept.
const (
	guardRefusal     = 10 * time.Second
	guardMaxVerdicts = 4096
)

// guard keeps raft traffic of other clusters away from raft. Every raft
// request names its sender (raft.RPCHeader.ID and Addr). Once this node
// knows its cluster (local returns an ID), a request is let through when
// its sender is in this node's raft configuration, or has answered
// wire.MethodIdentity with this node's cluster and the sender's ID; any
// other is answered with an error, so raft on this node never sees it
// (no heartbeat, vote or entry of another cluster's leader changes its
// term, its leader or its log). A sender not yet asked is refused once and
// asked in the background; its raft retries. A node that knows no cluster
// yet (fresh, joining) lets everything through.
type guard struct {
	local   func() string
	ask     func(ctx context.Context, rpcAddr string) (wire.IdentityReply, error)
	timeout time.Duration
	log     *slog.Logger
	servers atomic.Pointer[func() []raft.Server] // nil until raft runs

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	verdicts map[raft.ServerID]verdict
	// refused counts the raft requests answered with a refusal
	// (holdfast_transport_refused_total{reason="foreign_raft"}).
	refused atomic.Uint64
}

// verdict is what the guard decided about one sender.
type verdict struct {
	ok      bool
	asking  bool
	until   time.Time // a refusal stands until then
	cluster string    // the sender's cluster, when refused for it
}

func newGuard(local func() string, ask func(context.Context, string) (wire.IdentityReply, error), timeout time.Duration, log *slog.Logger) *guard {
	g := &guard{local: local, ask: ask, timeout: timeout, log: log, verdicts: map[raft.ServerID]verdict{}}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	return g
}

// stop ends the guard's questions in flight and waits for them.
func (g *guard) stop() {
	g.cancel()
	g.wg.Wait()
}

// check returns nil when the raft request cmd may reach raft, and the
// error to answer it with otherwise.
func (g *guard) check(cmd any) error {
	if g.local == nil {
		return nil
	}
	h, ok := cmd.(raft.WithRPCHeader)
	if !ok {
		return nil
	}
	hdr := h.GetRPCHeader()
	local := g.local()
	if local == "" || len(hdr.ID) == 0 {
		return nil
	}
	id := raft.ServerID(hdr.ID)
	g.mu.Lock()
	v, known := g.verdicts[id]
	g.mu.Unlock()
	switch {
	case known && v.ok:
		return nil
	case g.inConfig(id):
		g.set(id, verdict{ok: true})
		return nil
	case known && v.asking:
		g.refused.Add(1)
		return errUnverified
	case known && time.Now().Before(v.until):
		g.refused.Add(1)
		if v.cluster != "" {
			return fmt.Errorf("%w: this node belongs to cluster %s, server %s to cluster %s", wire.ErrForeignCluster, local, id, v.cluster)
		}
		return fmt.Errorf("%w: server %s is not in this node's configuration and did not show it belongs to cluster %s", wire.ErrForeignCluster, id, local)
	}
	g.refused.Add(1)
	g.set(id, verdict{asking: true})
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.verify(id, raft.ServerAddress(hdr.Addr), local)
	}()
	return errUnverified
}

// inConfig reports whether id is in this node's raft configuration.
func (g *guard) inConfig(id raft.ServerID) bool {
	servers := g.servers.Load()
	if servers == nil {
		return false
	}
	for _, s := range (*servers)() {
		if s.ID == id {
			return true
		}
	}
	return false
}

// set records v for id, forgetting every verdict when too many are kept.
func (g *guard) set(id raft.ServerID, v verdict) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.verdicts[id]; !ok && len(g.verdicts) >= guardMaxVerdicts {
		clear(g.verdicts)
	}
	g.verdicts[id] = v
}

// verify asks the sender id at raft address addr which node and cluster it
// is, and records the verdict.
func (g *guard) verify(id raft.ServerID, addr raft.ServerAddress, local string) {
	rpcAddr, _, err := transport.SplitRaftAddress(addr)
	var rep wire.IdentityReply
	if err == nil {
		ctx, cancel := context.WithTimeout(g.ctx, g.timeout)
		rep, err = g.ask(ctx, rpcAddr)
		cancel()
	}
	switch {
	case err == nil && rep.NodeID == string(id) && rep.ClusterID == local:
		g.set(id, verdict{ok: true})
		g.log.Info("raft sender outside this node's configuration belongs to its cluster", "server", id, "addr", rpcAddr)
		return
	case err == nil && rep.NodeID != string(id):
		err = fmt.Errorf("the node at %s is %s", rpcAddr, rep.NodeID)
	case err == nil && rep.ClusterID != "":
		g.set(id, verdict{until: time.Now().Add(guardRefusal), cluster: rep.ClusterID})
		g.log.Warn("refusing raft traffic from a server of another cluster", "server", id, "addr", rpcAddr,
			"its_cluster", rep.ClusterID, "cluster", local)
		return
	case err == nil:
		err = errors.New("it knows no cluster")
	}
	g.set(id, verdict{until: time.Now().Add(guardRefusal)})
	g.log.Warn("refusing raft traffic from a server outside this node's configuration that did not show it belongs to this cluster",
		"server", id, "addr", addr, "cluster", local, "error", err)
}

// useRaft makes the guard read r's latest configuration.
func (g *guard) useRaft(r *raft.Raft) {
	servers := func() []raft.Server {
		f := r.GetConfiguration()
		if f.Error() != nil {
			return nil
		}
		return f.Configuration().Servers
	}
	g.servers.Store(&servers)
}

// forward forwards raft requests from in to out when the guard lets
// them through and also (if not nil) does not refuse them, and answers the
// others with the refusal, until stop closes.
func (g *guard) forward(in <-chan raft.RPC, out chan<- raft.RPC, stop <-chan struct{}, also func(raft.RPC) error) {
	for {
		select {
		case rpc := <-in:
			err := g.check(rpc.Command)
			if err == nil && also != nil {
				err = also(rpc)
			}
			if err != nil {
				if rpc.Reader != nil {
					// A snapshot's bytes follow its request on the
					// connection, and its sender reads the answer only
					// once it sent them all: read them, as raft does,
					// or the sender gets a reset connection, not this.
					_, _ = io.Copy(io.Discard, rpc.Reader)
				}
				rpc.Respond(nil, err)
				continue
			}
			select {
			case out <- rpc:
			case <-stop:
				return
			}
		case <-stop:
			return
		}
	}
}
