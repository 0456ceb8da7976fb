package coordinator

import "fmt"

// sessionNow returns nil when this node holds a live session, and
// otherwise why not (Ready's error, wrapping ErrNotReady), naming call: a
// TryAcquire or TryAcquireSemaphore fails at once then, as its doc
// promises, instead of waiting for a session that may be minutes away (a
// cluster not formed yet, no quorum).
func (c *Coordinator) sessionNow(call string) error {
	if s, _ := c.currentSession(); s != nil {
		return nil
	}
	err := c.Ready()
	if err == nil {
		return nil // a session opened meanwhile
	}
	return fmt.Errorf("%w: %s does not wait for a session", err, call)
}
