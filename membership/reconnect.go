package membership

import (
	"slices"
	"strings"
	"time"
)

// Reconnect intervals used when Config.ReconnectInterval is zero.
const (
	// DefaultReconnectIntervalLAN is the LAN profile's reconnect interval.
	DefaultReconnectIntervalLAN = 5 * time.Second
	// DefaultReconnectIntervalLocal is the Local profile's.
	DefaultReconnectIntervalLocal = 500 * time.Millisecond
)

// reconnectInterval is the interval in effect for c; 0 means disabled.
func (c *Config) reconnectInterval() time.Duration {
	switch {
	case c.ReconnectInterval < 0:
		return 0
	case c.ReconnectInterval > 0:
		return c.ReconnectInterval
	case c.Profile == Local:
		return DefaultReconnectIntervalLocal
	}
	return DefaultReconnectIntervalLAN
}

// reconnectLoop re-joins members known to have failed, as serf's reconnect
// does. memberlist on its own never pushes its state to a node it
// declared dead once GossipToTheDeadTime has passed, and a node cut off
// from everyone sees every other node dead, so after a partition heals
// neither side would look for the other until some third node's periodic
// push/pull happens to bridge them, or never. Every interval the loop
// joins one failed member (round robin, by name); the push/pull of the join
// makes the two sides refute each other's death, so within a few rounds
// both see each other alive. A member that left gracefully is not
// contacted; a failed one is tried until it is reaped (Config.ReapAfter).
// Each attempt is bounded by memberlist's TCP timeout; the loop ends at
// Shutdown.
func (m *Membership) reconnectLoop(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	next := 0
	for {
		select {
		case <-m.done:
			return
		case <-t.C:
		}
		failed := m.failedAddrs()
		if len(failed) == 0 {
			continue
		}
		target := failed[next%len(failed)]
		next++
		m.joining.Add(1)
		_, err := m.ml.Join([]string{target})
		m.joining.Add(-1)
		m.takeRefusal()
		if err != nil {
			m.logger.Debug("reconnect attempt failed", "addr", target, "error", err)
		}
	}
}

// failedAddrs lists the addresses of Failed members, sorted by name.
func (m *Membership) failedAddrs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for name, e := range m.members {
		if e.member.State == Failed && name != m.cfg.NodeName && e.member.Addr != "" {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, strings.Compare)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = m.members[n].member.Addr
	}
	return out
}
