package coordinator

// PauseLessor installs a hook that the lessor calls at the start of each
// pass of its loop and as each keepalive reaches it (nil: none): a test
// blocks in it to freeze the lessor.
func (c *Coordinator) PauseLessor(hold func()) { c.lessor.SetPauseHook(hold) }

// LessorStalls is how many stalls this node's lessor detected.
func (c *Coordinator) LessorStalls() int {
	n, _ := c.lessor.Stalls()
	return n
}
