// Package shards is shard ownership, both sides: the Manager turns the
// replica's shard table into this node's shard leases, runs the
// application's handler and hands shards off when the leader revokes them,
// and drains the node on request; the Balancer is the raft leader's side,
// planning with shardown.Plan and committing grants, revokes and forced
// releases. Both follow the table by its changes (fsm.View.ShardChanges)
// rather than by rescanning it, so a rebalance costs what moves, and the
// Manager commits the releases of many shards in one command. The Manager
// ends every lease itself and watches each session once, so a lease costs
// one allocation and no callback registered in its context.
//
// Neither part knows the coordinator: each takes its neighbours (the
// replica's views, a proposer, the session, a clock, the logger and its
// metrics) through an options struct. The Manager owns its goroutines and
// joins them in Close; the Balancer's Run blocks for one leader term in a
// goroutine its caller joins.
package shards
