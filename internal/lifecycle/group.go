package lifecycle

import "sync"

// Group runs goroutines that a stop waits for. The zero value is ready to
// use; it is safe for concurrent use.
type Group struct {
	mu  sync.Mutex
	off bool
	wg  sync.WaitGroup
}

// Go runs f in a goroutine of the group; it reports false (and does not
// run f) once Close has been called.
func (g *Group) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.off {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
	return true
}

// Close makes every later Go refuse; the goroutines already running go on
// (Wait joins them).
func (g *Group) Close() {
	g.mu.Lock()
	g.off = true
	g.mu.Unlock()
}

// Wait returns once every goroutine Go started has returned.
func (g *Group) Wait() { g.wg.Wait() }
