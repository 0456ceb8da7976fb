package coordinator

import (
	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/transport"
)

// ForceAddNonvoter adds the node id at rpcAddr to this leader's raft
// configuration as a non-voter without any admission check, as a leader of
// an earlier release did with a node that gossiped no cluster ID.
func (c *Coordinator) ForceAddNonvoter(id, rpcAddr string) error {
	return c.node.Raft().AddNonvoter(raft.ServerID(id), transport.RaftAddress(rpcAddr, id), 0, c.cfg.RPCTimeout).Error()
}

// RaftServers lists the raft IDs of this node's raft configuration.
func (c *Coordinator) RaftServers() []string {
	var out []string
	for _, s := range c.node.Servers() {
		out = append(out, string(s.ID))
	}
	return out
}
