package coordinator

// HasSession reports whether this node's replica holds session id.
func (c *Coordinator) HasSession(id string) bool {
	_, ok := c.fsm.View().Session(id)
	return ok
}
