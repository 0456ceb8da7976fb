package coordinator

import (
	"github.com/holdfast-go/holdfast/internal/feed"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// feedReplica reports whether this node is a replica fed outside raft
// (Config.Cluster.ReplicaFeed, and no DataDir).
func (c *Coordinator) feedReplica() bool { return c.cfg.Cluster.ReplicaFeed && c.cfg.DataDir == "" }

// registerFeed serves the replica feed (feed.Method) to replicas outside
// raft, while this node is in touch with the raft group.
func (c *Coordinator) registerFeed(d *wire.Dispatcher) {
	s := feed.NewServer(feed.ServerOptions{
		Replica: c.fsm,
		Logs:    c.node.LogStore(),
		Serving: c.feedServing,
		Leader: func() (string, string) {
			addr, _ := c.node.LeaderRPCAddr()
			_, id := c.node.LeaderWithID()
			return addr, string(id)
		},
		LeaderChanged: c.noLeader.Changed,
	})
	d.Handle(feed.Method, wire.Typed(s.Serve))
}

// feedServing: this node is a voter-eligible member of the raft group
// whose replica is recent (feed.Recent).
func (c *Coordinator) feedServing() bool {
	r := c.node.Raft()
	return c.cfg.DataDir != "" && feed.Recent(r.LastIndex(), c.fsm.View().Cluster().ID != "", c.node.Leading(), r.LastContact(),
		c.cfg.Raft.HeartbeatTimeout)
}

// startFeed keeps this node's replica fed outside raft (feedReplica).
func (c *Coordinator) startFeed() {
	ttl := feed.DefaultMaxWait + 2*c.cfg.RPCTimeout
	cl := feed.NewClient(feed.ClientOptions{
		Name:    c.cfg.NodeName,
		Replica: c.fsm,
		Servers: c.feedServers,
		Call:    c.trans.Call,
		Leader: func(addr, id string) {
			if c.node.SetLeaderHint(addr, id, ttl) {
				c.noLeader.Notify(addr != "")
			}
		},
		RPCTimeout: c.cfg.RPCTimeout,
		Log:        c.log,
		InRaft:     func() bool { return c.node.Raft().LastIndex() > 0 },
	})
	c.spawn(func() { cl.Run(c.ctx) })
}

// feedServers are the live voter-eligible members of this node's cluster.
func (c *Coordinator) feedServers() []feed.Peer {
	return feed.PeersOf(c.members.Members(), c.id, c.ClusterID())
}
