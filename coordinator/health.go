package coordinator

import (
	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/storehealth"
)

// GroupHealth is the raft group's health as the leader's autopilot last
// judged it (Known, Leader, Age, FailureTolerance, Voters, Wanted); its
// Degraded method reports whether the group needs attention. The leader
// hands its judgement to every member of the raft configuration, so
// followers and non-voters report the leader's figures.
type GroupHealth = cluster.GroupHealth

// VoterHealth is one voter's health in a GroupHealth.
type VoterHealth = cluster.VoterHealth

// StorageHealth is this node's raft storage (its log, term and vote on
// disk): fine (the zero value), or failing since a time, with the operation
// and the error (and Failed when only a restart helps). See
// GroupHealth.Storage.
type StorageHealth = storehealth.Health

// Health returns the group's health as this node last learned it, and
// this node's own raft storage (see GroupHealth).
func (c *Coordinator) Health() GroupHealth {
	g := c.cluster.GroupHealth()
	if c.node != nil {
		g.Storage = c.node.StorageHealth()
	}
	return g
}
