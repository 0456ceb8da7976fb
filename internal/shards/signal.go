package shards

import "sync/atomic"

// signal is a channel closed once, made only when someone waits on it
// before it fires: most leases are never revoked and nobody waits for
// their Serve callback, so most leases never make either channel (about
// 100 bytes each). The zero signal has not fired.
type signal struct{ p atomic.Pointer[chan struct{}] }

// wait returns a channel closed once the signal fires.
func (s *signal) wait() <-chan struct{} {
	if c := s.p.Load(); c != nil {
		return *c
	}
	c := make(chan struct{})
	if s.p.CompareAndSwap(nil, &c) {
		return c
	}
	return *s.p.Load()
}

// fire closes the signal's channel; closed is an already closed channel
// that stands in for it when nobody waited yet. Call it at most once.
func (s *signal) fire(closed *chan struct{}) {
	if !s.p.CompareAndSwap(nil, closed) {
		close(*s.p.Load())
	}
}

// fired reports whether fire was called (and returned).
func (s *signal) fired() bool {
	select {
	case <-s.wait():
		return true
	default:
		return false
	}
}
