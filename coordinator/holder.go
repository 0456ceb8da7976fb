package coordinator

// Holder is who holds something the cluster grants, as a replica shows
// it: a named lease (Holder, Leases, Observe), a semaphore permit
// (Semaphore) or a shard (Owner, ShardTable). Its Token is the fencing
// token of that grant. The zero Holder means nobody.
type Holder struct {
	// Node is the holding node's name (Config.NodeName).
	Node string
	// NodeID is the holding node's identity, also its raft server ID.
	NodeID string
	// Addr is where applications reach the holding node: its
	// Config.ServiceAddr, or its RPC address when that is empty.
	Addr string
	// Session is the holding node's session.
	Session string
	// Token is the fencing token of the grant.
	Token uint64
	// Value is the holder value of a lease's grant ("" for none, and for
	// permits and shards): what its holder attached with WithValue or
	// Lease.SetValue, such as the address where it serves.
	Value string
}
