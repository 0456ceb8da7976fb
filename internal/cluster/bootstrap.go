package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// Bootstrap protocol (docs/ARCHITECTURE.md, cluster formation). A fresh
// voter-eligible node waits until
// gossip shows BootstrapExpect eligible fresh members and no formed cluster.
// The member with the smallest name among the first BootstrapExpect (by name)
// proposes that set: it asks each member to promise (prepare); a member
// promises at most one proposal at a time, and only while it has no raft
// state and sees no cluster ID. Once every member promised, the proposer
// bootstraps raft with the set and tells the others (commit), who bootstrap
// with the identical configuration. If any member refuses, the proposer
// releases the promises (abort) and retries later. Two proposals can only
// both succeed with disjoint member sets, which needs 2×BootstrapExpect
// fresh nodes that do not see each other: start fewer than that before the
// cluster forms. A promise lasts BootstrapPromiseTTL; the proposer only
// bootstraps if every promise arrived within half of it.

type bootstrapper struct {
	cl   *Cluster
	wake chan struct{}

	mu       sync.Mutex
	promised string    // proposal ID promised, "" for none
	expires  time.Time // when the promise lapses
	done     bool      // bootstrapped, or a cluster was found
}

func newBootstrapper(cl *Cluster) *bootstrapper {
	return &bootstrapper{cl: cl, wake: make(chan struct{}, 1)}
}

// poke re-evaluates soon (membership changed).
func (b *bootstrapper) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *bootstrapper) isDone() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done
}

func (b *bootstrapper) setDone() {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
}

// run is the bootstrap loop of a fresh voter-eligible node.
func (b *bootstrapper) run() {
	cl := b.cl
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	interval := cl.o.HeartbeatTimeout
	for cl.ctx.Err() == nil && !b.isDone() {
		if reason := b.ineligible(); reason != "" {
			cl.log.Debug("not bootstrapping", "reason", reason)
			b.setDone()
			return
		}
		if set := b.proposalSet(); set != nil {
			if err := b.propose(set); memberStarting(err) {
				cl.log.Debug("bootstrap proposal deferred: a member is still starting; retrying", "error", err)
			} else if err != nil {
				cl.log.Info("bootstrap proposal failed; retrying", "error", err)
			}
		}
		jitter := time.Duration(rng.Int64N(int64(interval)))
		t := time.NewTimer(interval + jitter)
		select {
		case <-cl.ctx.Done():
		case <-b.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// memberStarting reports whether err (possibly several joined) only says
// that members of the proposal have not finished starting: a node gossips
// its address while New is still joining, before its RPC handler is
// installed, so on a normal start the proposer often reaches the last
// member to join before it can answer (transport.CodeUnavailable).
func memberStarting(err error) bool {
	if err == nil {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !memberStarting(e) {
				return false
			}
		}
		return true
	}
	var re *transport.RemoteError
	return errors.As(err, &re) && re.Code == transport.CodeUnavailable
}

// ineligible says why this node must not bootstrap, or "".
func (b *bootstrapper) ineligible() string {
	cl := b.cl
	if cl.hasRaftState() {
		return "has raft state"
	}
	if id := cl.ClusterID(); id != "" {
		return "member of cluster " + id
	}
	for _, m := range cl.members.Members() {
		if m.State != membership.Alive && m.State != membership.Suspect {
			continue
		}
		if m.Meta.ClusterID != "" {
			return "sees cluster " + m.Meta.ClusterID + " (via " + m.Name + ")"
		}
	}
	return ""
}

// proposalSet returns the servers to propose when this node is the
// proposer, or nil.
func (b *bootstrapper) proposalSet() []wire.BootServer {
	cl := b.cl
	fresh := cl.freshEligible()
	if len(fresh) < cl.o.BootstrapExpect {
		return nil
	}
	fresh = fresh[:cl.o.BootstrapExpect]
	if fresh[0].Name != cl.o.NodeName {
		return nil
	}
	set := make([]wire.BootServer, len(fresh))
	for i, m := range fresh {
		set[i] = wire.BootServer{Name: m.Name, ID: m.Meta.NodeID, Addr: m.Meta.RPCAddr}
	}
	return set
}

// propose runs one prepare/commit round for set.
func (b *bootstrapper) propose(set []wire.BootServer) error {
	cl := b.cl
	p := wire.BootProposal{ID: cl.o.NewID(), By: cl.o.NodeName, Servers: set, ClusterID: cl.o.NewID()}
	if reason := b.promise(p); reason != "" {
		return errors.New(reason)
	}
	start := cl.o.Now()
	accepted, err := b.broadcast(wire.MethodBootstrapPrepare, p)
	if err != nil || cl.o.Now().Sub(start) > cl.o.BootstrapPromiseTTL/2 {
		b.broadcastTo(accepted, wire.MethodBootstrapAbort, p)
		b.release(p.ID)
		if err == nil {
			err = errors.New("promises arrived too late")
		}
		return err
	}
	cl.log.Info("bootstrapping a new cluster", "servers", len(set), "proposal", p.ID)
	if err := b.bootstrap(p); err != nil {
		return err
	}
	b.broadcastTo(accepted, wire.MethodBootstrapCommit, p)
	return nil
}

// broadcast sends p to every other server in parallel. It returns the
// names that accepted, and an error if any refused or failed.
func (b *bootstrapper) broadcast(method string, p wire.BootProposal) ([]string, error) {
	var others []string
	for _, s := range p.Servers {
		if s.Name != b.cl.o.NodeName {
			others = append(others, s.Name)
		}
	}
	return b.broadcastTo(others, method, p)
}

func (b *bootstrapper) broadcastTo(names []string, method string, p wire.BootProposal) ([]string, error) {
	cl := b.cl
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(names))
	for _, name := range names {
		var addr string
		for _, s := range p.Servers {
			if s.Name == name {
				addr = s.Addr
			}
		}
		go func() {
			ctx, cancel := context.WithTimeout(cl.ctx, cl.o.RPCTimeout)
			defer cancel()
			var rep wire.BootReply
			err := cl.o.Caller.Call(ctx, addr, method, p, &rep)
			if err == nil && !rep.OK {
				err = fmt.Errorf("%s refused: %s", name, rep.Reason)
			}
			results <- result{name, err}
		}()
	}
	var ok []string
	var errs []error
	for range names {
		r := <-results
		if r.err != nil {
			errs = append(errs, r.err)
		} else {
			ok = append(ok, r.name)
		}
	}
	return ok, errors.Join(errs...)
}

// promise records a promise to p; it returns a reason when it cannot.
func (b *bootstrapper) promise(p wire.BootProposal) string {
	if reason := b.ineligible(); reason != "" {
		return reason
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return "already bootstrapped"
	}
	now := b.cl.o.Now()
	if b.promised != "" && b.promised != p.ID && now.Before(b.expires) {
		return "promised to proposal " + b.promised
	}
	b.promised = p.ID
	b.expires = now.Add(b.cl.o.BootstrapPromiseTTL)
	return ""
}

func (b *bootstrapper) release(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.promised == id {
		b.promised = ""
	}
}

// bootstrap starts raft with p's servers as the voters.
func (b *bootstrapper) bootstrap(p wire.BootProposal) error {
	var conf raft.Configuration
	for _, s := range p.Servers {
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter,
			ID:       raft.ServerID(s.ID),
			Address:  transport.RaftAddress(s.Addr, s.ID),
		})
	}
	err := b.cl.o.Raft.BootstrapCluster(conf).Error()
	if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("holdfast: bootstrap: %w", err)
	}
	b.setDone()
	if p.ClusterID != "" && err == nil {
		// Recorded once raft has state, before this node's first raft
		// message: from now on it knows its cluster, restarted or not.
		b.cl.record(p.ClusterID, 0)
	}
	return nil
}

// ServeBootstrap answers the bootstrap RPCs (wire.MethodBootstrapPrepare,
// wire.MethodBootstrapCommit, wire.MethodBootstrapAbort) of another node's proposal.
func (cl *Cluster) ServeBootstrap(method string, body []byte) ([]byte, error) {
	return cl.boot.serve(method, body)
}

// Register registers the cluster part's handlers in d: autopilot's stats
// poll (ServeStats), the bootstrap round (ServeBootstrap) and the node's
// identity (ServeIdentity).
func (cl *Cluster) Register(d *wire.Dispatcher) {
	d.Handle(wire.MethodStats, func(_ context.Context, body []byte) ([]byte, error) { return cl.ServeStats(body) })
	d.Handle(wire.MethodLeave, wire.Typed(cl.ServeLeave))
	d.Handle(wire.MethodIdentity, func(context.Context, []byte) ([]byte, error) { return cl.ServeIdentity() })
	for _, m := range []string{wire.MethodBootstrapPrepare, wire.MethodBootstrapCommit, wire.MethodBootstrapAbort} {
		d.Handle(m, func(_ context.Context, body []byte) ([]byte, error) { return cl.ServeBootstrap(m, body) })
	}
}

// serve answers one bootstrap RPC: a prepare promises (if this node is in
// the set and free to), an abort releases, a commit bootstraps only the
// proposal this node promised.
func (b *bootstrapper) serve(method string, body []byte) ([]byte, error) {
	var p wire.BootProposal
	if err := transport.Decode(body, &p); err != nil {
		return nil, err
	}
	rep := wire.BootReply{OK: true}
	switch method {
	case wire.MethodBootstrapPrepare:
		if !b.inSet(p) {
			rep = wire.BootReply{Reason: "not in the proposed set, or not voter-eligible"}
		} else if reason := b.promise(p); reason != "" {
			rep = wire.BootReply{Reason: reason}
		}
	case wire.MethodBootstrapAbort:
		b.release(p.ID)
	case wire.MethodBootstrapCommit:
		b.mu.Lock()
		ours := b.promised == p.ID
		b.mu.Unlock()
		if !ours {
			rep = wire.BootReply{Reason: "not promised to this proposal"}
		} else if err := b.bootstrap(p); err != nil {
			rep = wire.BootReply{Reason: err.Error()}
		} else {
			b.cl.log.Info("bootstrapped with proposal", "proposal", p.ID, "by", p.By)
		}
	}
	return transport.Encode(rep)
}

// inSet reports whether this node (by name and identity) is in p.
func (b *bootstrapper) inSet(p wire.BootProposal) bool {
	o := b.cl.o
	if !o.Eligible || o.BootstrapExpect == 0 {
		return false
	}
	for _, s := range p.Servers {
		if s.Name == o.NodeName && s.ID == o.ID {
			return true
		}
	}
	return false
}
