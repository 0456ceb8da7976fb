package coordinator

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// newSessionClient wires the holder's side of sessions
// (internal/session.Client) to this node's raft, replica and transport.
// New makes it, so the node's current session can be read (metrics, API)
// from the start; its Run is one of the loops start starts, under sessCtx.
func (c *Coordinator) newSessionClient() *session.Client {
	return session.NewClient(session.ClientOptions{
		Log:         c.log,
		Clock:       c.clock,
		Step:        c.clockStep(),
		TTL:         c.cfg.Session.TTL,
		RPCTimeout:  c.cfg.RPCTimeout,
		Margin:      c.cfg.Session.LeaseMargin,
		MaxDrift:    c.cfg.Session.MaxClockDrift,
		NewID:       newID,
		LeaderKnown: func() bool { addr, _ := c.leaderRPCAddr(); return addr != "" },
		Create: func(ctx context.Context, id string) (uint64, error) {
			cmd := &fsm.SessionCmd{ID: id, Node: c.cfg.NodeName, NodeID: c.id, TTLNanos: int64(c.cfg.Session.TTL)}
			c.shardSessionCmd(cmd)
			res, err := c.apply(ctx, fsm.Command{Op: fsm.OpSessionCreate, Session: cmd})
			return res.Index, err
		},
		Close: func(ctx context.Context, id string) error {
			_, err := c.apply(ctx, fsm.Command{Op: fsm.OpSessionClose, Session: &fsm.SessionCmd{ID: id}})
			return err
		},
		KeepAlive: c.sendKeepAlive,
		Wait:      c.fsm.Wait,
		Renewing:  func(v *fsm.View, s *session.Session) { c.shards.Sync(v, s) },
		Spawn:     c.spawn,
		Metrics:   c.metrics.session,
	})
}

// currentSession returns the session if its belief is valid, else nil,
// plus a channel closed when the session changes.
func (c *Coordinator) currentSession() (*session.Session, <-chan struct{}) {
	return c.sessions.Current()
}

// waitSession blocks until this node has a valid session.
func (c *Coordinator) waitSession(ctx context.Context) (*session.Session, error) {
	for {
		s, changed := c.currentSession()
		if s != nil {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.ctx.Done():
			return nil, ErrShutdown
		case <-changed:
		}
	}
}

// sendKeepAlive sends one keepalive for session id to the current leader
// (this node's lessor if it leads) and returns the leader's applied index
// at the moment it answered.
func (c *Coordinator) sendKeepAlive(ctx context.Context, id string) (uint64, error) {
	addr, self := c.leaderRPCAddr()
	switch {
	case self:
		return c.lessor.KeepAlive(ctx, id)
	case addr == "":
		return 0, ErrNoLeader
	}
	var rep keepAliveReply
	err := fromRemote(c.trans.Call(ctx, addr, methodKeepAlive, keepAliveRequest{Session: id}, &rep))
	return rep.Index, err
}

type (
	keepAliveRequest = wire.KeepAliveRequest
	keepAliveReply   = wire.KeepAliveReply
)

// jitter returns d ± 10%.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - d/10 + rand.N(d/5+1)
}
