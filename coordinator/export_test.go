package coordinator

// WrongTargetConns counts raft connections that reached this node but were
// addressed to another identity (refused).
func (c *Coordinator) WrongTargetConns() uint64 { return c.trans.Stats().WrongTarget }
