package coordinator

import (
	"context"
	"errors"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// The coordinator's names for the raft host's and the protocol's types,
// so the parts not yet moved out keep their spelling.
type (
	applyResult = wire.ApplyResult
	statsReply  = wire.StatsReply
	futures     = raftnode.Futures
)

// loadIdentity reads (or creates) the node identity in the data dir; a
// data dir last used under another name is a Config error.
func loadIdentity(dataDir, name string, allowRename bool) (raftnode.Identity, error) {
	id, err := raftnode.LoadIdentity(dataDir, name, allowRename)
	var re *raftnode.RenameError
	if errors.As(err, &re) {
		return id, fieldErr("NodeName", "is %q, but DataDir %s holds the identity of node %q; "+
			"set Config.AllowRename to rename that node, or give this one another DataDir", re.Name, re.DataDir, re.Previous)
	}
	return id, err
}

// startRaft opens the stores and starts the raft instance.
func (c *Coordinator) startRaft() error {
	r := c.cfg.Raft
	n, err := raftnode.Start(raftnode.Options{
		ID:      c.id,
		DataDir: c.cfg.DataDir,
		Timing: raftnode.Timing{HeartbeatTimeout: r.HeartbeatTimeout, ElectionTimeout: r.ElectionTimeout,
			LeaderLeaseTimeout: r.LeaderLeaseTimeout, CommitTimeout: r.CommitTimeout,
			SnapshotThreshold: c.cfg.Raft.SnapshotThreshold, TrailingLogs: c.cfg.Raft.TrailingLogs},
		RPCTimeout: c.cfg.RPCTimeout,
		Trans:      c.trans,
		FSM:        c.fsm,
		NotifyCh:   c.leaderCh,
		Futures:    &c.futs,
		Context:    c.ctx,
		Log:        c.log,
		Metrics:    c.metrics.raft,
		Applied:    func() uint64 { return c.fsm.View().Index() },
	})
	if err != nil {
		return err
	}
	c.node, c.raft = n, n.Raft()
	return nil
}

// issue starts a raft request through the node's futures (see
// raftnode.Issue).
func issue[F raft.Future](ctx context.Context, fs *futures, mk func() F) (F, error) {
	return raftnode.Issue(ctx, fs, mk)
}

// wrap is wire.Wrap: outer wrapping causes, "holdfast: " named once.
func wrap(outer error, causes ...error) error { return wire.Wrap(outer, causes...) }

// newID returns a fresh random identifier.
func newID() string { return raftnode.NewID() }

// writeFileSync writes b to path atomically and durably.
func writeFileSync(path string, b []byte) error { return raftnode.WriteFileSync(path, b) }

// toRemote and fromRemote map errors to and from wire errors.
func toRemote(err error) error   { return wire.ToRemote(err) }
func fromRemote(err error) error { return wire.FromRemote(err) }

func (c *Coordinator) apply(ctx context.Context, cmd fsm.Command) (applyResult, error) {
	return c.node.Apply(ctx, cmd)
}

func (c *Coordinator) applyLocal(ctx context.Context, data []byte) (applyResult, error) {
	return c.node.ApplyLocal(ctx, data)
}

func (c *Coordinator) leaderRPCAddr() (addr string, self bool) { return c.node.LeaderRPCAddr() }
func (c *Coordinator) localStats() statsReply                  { return c.node.Stats() }
func (c *Coordinator) removeSelf(ctx context.Context) error    { return c.node.RemoveSelf(ctx) }
func (c *Coordinator) hasRaftState() bool                      { return c.node.HasState() }
func (c *Coordinator) raftAddress() raft.ServerAddress         { return c.node.Address() }
func (c *Coordinator) raftServers() []raft.Server              { return c.node.Servers() }
