package coordinator

import "github.com/holdfast-go/holdfast/internal/leases"

// SemaphoreInfo describes one semaphore in use, as a replica shows it.
type SemaphoreInfo struct {
	// Name is the semaphore's name; Limit its number of permits, fixed by
	// the first acquire while it was free.
	Name  string
	Limit int
	// Holders hold its permits, in grant (token) order.
	Holders []Holder
	// Waiters is the number of requests queued for a permit.
	Waiters int
}

// Semaphores lists every semaphore with a holder or a waiter from the
// local replica, sorted by name (see Semaphore for one name's holders).
func (c *Coordinator) Semaphores() []SemaphoreInfo {
	v := c.fsm.View()
	sems := v.Semaphores()
	out := make([]SemaphoreInfo, 0, len(sems))
	for _, s := range sems {
		out = append(out, SemaphoreInfo{Name: s.Name, Limit: int(s.Limit), Holders: leases.SemHolders(v, s.Name, toHolder),
			Waiters: len(s.Waiters)})
	}
	return out
}
