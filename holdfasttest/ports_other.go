//go:build !linux

package holdfasttest

// portLocks reserves nothing outside Linux: loopback nodes bind port 0 and
// a restart reuses the port the first start was given.
type portLocks struct{}

func (pl *portLocks) reserve() (port int, ok bool, err error) { return 0, false, nil }

func (pl *portLocks) release() {}
