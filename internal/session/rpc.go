package session

import (
	"context"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// Caller makes one outbound RPC (*transport.Transport implements it).
type Caller interface {
	Call(ctx context.Context, addr, method string, req, resp any) error
}

// LeaderFunc returns the raft leader's RPC address ("" when none is
// known) and whether this node is the leader.
type LeaderFunc func() (addr string, self bool)

// SendKeepAlive returns a ClientOptions.KeepAlive that renews a session at
// the current leader: local (this node's lessor) when this node leads,
// else wire.MethodKeepAlive over caller() (read at each call: the host's
// transport may start after the client is built). It returns the leader's applied
// index at the moment it answered; wire.ErrNoLeader when no leader is
// known. loads (nil: none) gives the shard loads a remote keepalive
// carries (see wire.KeepAliveRequest); the local path reports its own.
func SendKeepAlive(leader LeaderFunc, local func(ctx context.Context, id string) (uint64, error), caller func() Caller, loads func() ([]uint32, []float32)) func(ctx context.Context, id string) (uint64, error) {
	return func(ctx context.Context, id string) (uint64, error) {
		addr, self := leader()
		switch {
		case self:
			return local(ctx, id)
		case addr == "":
			return 0, wire.ErrNoLeader
		}
		req := wire.KeepAliveRequest{Session: id}
		if loads != nil {
			req.Shards, req.Loads = loads()
		}
		var rep wire.KeepAliveReply
		err := wire.FromRemote(caller().Call(ctx, addr, wire.MethodKeepAlive, req, &rep))
		return rep.Index, err
	}
}

// Register registers the session handlers in d: wire.MethodKeepAlive
// (answered by this lessor, which refuses while it is not active) and
// wire.MethodConfirm (answered from LessorOptions.Term and Self: yes while
// this node's current raft term is the one asked about and this node is
// the voter asked for). The loads an answered keepalive carries go to
// LessorOptions.Loads.
func (l *Lessor) Register(d *wire.Dispatcher) {
	d.Handle(wire.MethodKeepAlive, wire.Typed(func(ctx context.Context, req wire.KeepAliveRequest) (wire.KeepAliveReply, error) {
		index, err := l.KeepAlive(ctx, req.Session)
		if err == nil && l.o.Loads != nil && len(req.Shards) > 0 {
			l.o.Loads(req.Session, req.Shards, req.Loads)
		}
		return wire.KeepAliveReply{Index: index}, err
	}))
	d.Handle(wire.MethodConfirm, ServeConfirm(l.o.Term, l.o.Self))
}

// AskConfirm returns a LessorOptions.Confirm that asks voter v, at its
// address, over call, whether it is still in term (wire.MethodConfirm).
// The request names v's raft server ID, and an answer from a node that
// says it is another is a no: whatever listens at a voter's address (a
// wiped node back under a new identity, another node that took the
// address) cannot speak for the voter. An answer without an ID (a release
// that does not send it) is taken as it is.
func AskConfirm(call Caller) func(ctx context.Context, v Voter, term uint64) (bool, error) {
	return func(ctx context.Context, v Voter, term uint64) (bool, error) {
		var rep wire.ConfirmReply
		err := call.Call(ctx, v.Addr, wire.MethodConfirm, wire.ConfirmRequest{Term: term, ID: v.ID}, &rep)
		if err != nil {
			return false, err
		}
		return rep.OK && (rep.ID == "" || rep.ID == v.ID), nil
	}
}

// ServeConfirm returns the handler of wire.MethodConfirm on the node with
// raft server ID self: yes while its current raft term (term) is the one
// asked about and the request asks for self (or names no voter, from a
// release that does not send the ID). The answer carries self.
func ServeConfirm(term func() uint64, self string) wire.HandlerFunc {
	return wire.Typed(func(_ context.Context, req wire.ConfirmRequest) (wire.ConfirmReply, error) {
		return wire.ConfirmReply{OK: term() == req.Term && (req.ID == "" || req.ID == self), ID: self}, nil
	})
}

// VotersOf lists the voters among servers with their RPC addresses (""
// where the raft address does not parse), for LessorOptions.Voters.
func VotersOf(servers []raft.Server) []Voter {
	var voters []Voter
	for _, s := range servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		addr, _, err := transport.SplitRaftAddress(s.Address)
		if err != nil {
			addr = ""
		}
		voters = append(voters, Voter{ID: string(s.ID), Addr: addr})
	}
	return voters
}

// NotLeaderHere returns a LessorOptions.NotLeader: the error for a
// leader-only request this node cannot serve, naming the leader when
// another node is known to lead.
func NotLeaderHere(leader LeaderFunc) func() error {
	return func() error {
		addr, self := leader()
		if self {
			addr = ""
		}
		return &wire.NotLeaderError{Leader: addr}
	}
}

// Await blocks until c has a valid session and returns it: ctx's error
// once ctx ends first, wire.ErrShutdown once stop is closed first.
func (c *Client) Await(ctx context.Context, stop <-chan struct{}) (*Session, error) {
	for {
		s, changed := c.Current()
		if s != nil {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-stop:
			return nil, wire.ErrShutdown
		case <-changed:
		}
	}
}
