package coordinator

import (
	"context"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/session"
)

// newSessionClient wires the holder's side of sessions
// (internal/session.Client) to this node's raft, replica and transport.
// New makes it, so the node's current session can be read (metrics, API)
// from the start; its Run is one of the loops start starts, under sessCtx.
func (c *Coordinator) newSessionClient() *session.Client {
	leader := func() (string, bool) { return c.node.LeaderRPCAddr() } // c.node starts later
	return session.NewClient(session.ClientOptions{
		Log:           c.log,
		Clock:         c.clock,
		Step:          c.clockStep(),
		TTL:           c.cfg.Session.TTL,
		RPCTimeout:    c.cfg.RPCTimeout,
		Margin:        c.cfg.Session.LeaseMargin,
		MaxDrift:      c.cfg.Session.MaxClockDrift,
		NewID:         raftnode.NewID,
		LeaderKnown:   func() bool { addr, _ := leader(); return addr != "" },
		LeaderChanged: c.noLeader.Changed,
		Held:          func() error { return c.node.StorageBlocking() },
		Create: func(ctx context.Context, id string, gen uint64) (uint64, error) {
			cmd := &fsm.SessionCmd{ID: id, Node: c.cfg.NodeName, NodeID: c.id, TTLNanos: int64(c.cfg.Session.TTL), Gen: gen}
			c.shards.FillSessionCmd(cmd)
			res, err := c.node.Apply(ctx, fsm.Command{Op: fsm.OpSessionCreate, Session: cmd})
			if err == nil && res.Stale {
				err = session.ErrStale
			}
			return res.Index, err
		},
		Generation: func() uint64 {
			var gen uint64
			for _, s := range c.fsm.View().Sessions() {
				if s.NodeID == c.id {
					gen = max(gen, s.Gen)
				}
			}
			return gen
		},
		Close: func(ctx context.Context, id string) error {
			_, err := c.node.Apply(ctx, fsm.Command{Op: fsm.OpSessionClose, Session: &fsm.SessionCmd{ID: id}})
			return err
		},
		KeepAlive: session.SendKeepAlive(leader, func(ctx context.Context, id string) (uint64, error) {
			index, err := c.lessor.KeepAlive(ctx, id)
			if err == nil {
				c.recordLocalLoads(id)
			}
			return index, err
		}, func() session.Caller { return c.trans }, c.loads.meter.Report),
		Wait:     c.fsm.Wait,
		Renewing: func(v *fsm.View, s *session.Session) { c.shards.Sync(v, s) },
		Spawn:    c.spawn,
		Metrics:  c.metrics.session,
	})
}

// currentSession returns the session if its belief is valid, else nil,
// plus a channel closed when the session changes.
func (c *Coordinator) currentSession() (*session.Session, <-chan struct{}) {
	return c.sessions.Current()
}

// waitSession blocks until this node has a valid session.
func (c *Coordinator) waitSession(ctx context.Context) (*session.Session, error) {
	return c.sessions.Await(ctx, c.ctx.Done())
}
