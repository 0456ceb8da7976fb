package coordinator

// SessionsOfNode returns the IDs of the sessions the local replica shows
// for the node with the given raft ID.
func (c *Coordinator) SessionsOfNode(nodeID string) []string {
	var ids []string
	for _, s := range c.fsm.View().Sessions() {
		if s.NodeID == nodeID {
			ids = append(ids, s.ID)
		}
	}
	return ids
}
