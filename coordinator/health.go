package coordinator

import "github.com/holdfast-go/holdfast/internal/cluster"

// GroupHealth is the raft group's health as the leader's autopilot last
// judged it (Known, Leader, Age, FailureTolerance, Voters, Wanted); its
// Degraded method reports whether the group needs attention. The leader
// hands its judgement to every member of the raft configuration, so
// followers and non-voters report the leader's figures.
type GroupHealth = cluster.GroupHealth

// VoterHealth is one voter's health in a GroupHealth.
type VoterHealth = cluster.VoterHealth

// Health returns the group's health as this node last learned it (see
// GroupHealth).
func (c *Coordinator) Health() GroupHealth { return c.cluster.GroupHealth() }
