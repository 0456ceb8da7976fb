package membership

import (
	"log/slog"
	"sync"

	"github.com/hashicorp/memberlist"
	"github.com/vmihailenco/msgpack/v5"
)

// Leave notices. memberlist reports a graceful leave and a failure through
// the same callback (NotifyLeave), so, as serf does, a leaving node first
// gossips a notice; a member whose notice arrived is recorded as Left, and a
// notice arriving after the failure report turns Failed into Left.

// msgLeave is the first byte of a leave notice; the rest is a leaveNotice.
const msgLeave byte = 1

// leaveNotice says that Node, reachable at Addr, is leaving.
type leaveNotice struct {
	Node string `msgpack:"n"`
	Addr string `msgpack:"a"`
}

// leaveBroadcast is a leave notice in memberlist's broadcast queue; a newer
// notice for the same node replaces it.
type leaveBroadcast struct {
	node string
	msg  []byte
	once sync.Once
	sent chan struct{} // closed when memberlist is done transmitting it
}

var _ memberlist.NamedBroadcast = (*leaveBroadcast)(nil)

// Invalidates reports whether b replaces other.
func (b *leaveBroadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(*leaveBroadcast)
	return ok && o.node == b.node
}

// Name identifies the broadcast for memberlist's queue.
func (b *leaveBroadcast) Name() string { return "leave/" + b.node }

// Message returns the encoded notice.
func (b *leaveBroadcast) Message() []byte { return b.msg }

// Finished signals that the broadcast was transmitted or replaced.
func (b *leaveBroadcast) Finished() { b.once.Do(func() { close(b.sent) }) }

// broadcastLeave queues a leave notice for node and returns a channel that is
// closed once memberlist has finished transmitting it.
func (m *Membership) broadcastLeave(node, addr string) <-chan struct{} {
	body, err := msgpack.Marshal(&leaveNotice{Node: node, Addr: addr})
	b := &leaveBroadcast{node: node, sent: make(chan struct{})}
	if err != nil { // cannot happen for two strings
		m.logger.Error("encode leave notice", slog.Any("error", err))
		b.Finished()
		return b.sent
	}
	b.msg = append([]byte{msgLeave}, body...)
	m.bcast.QueueBroadcast(b)
	return b.sent
}

// handleMessage processes a user message received through gossip.
func (m *Membership) handleMessage(b []byte) {
	if len(b) == 0 || b[0] != msgLeave || len(b) > 1+2*MaxMetaSize {
		m.logger.Debug("ignoring unknown gossip message", slog.Int("len", len(b)))
		return
	}
	var n leaveNotice
	if err := msgpack.Unmarshal(b[1:], &n); err != nil {
		m.logger.Debug("ignoring malformed leave notice", slog.Any("error", err))
		return
	}
	if m.applyLeave(n) {
		m.broadcastLeave(n.Node, n.Addr) // pass it on
	}
}

// applyLeave records notice n; it reports whether n was news.
func (m *Membership) applyLeave(n leaveNotice) bool {
	if n.Node == m.cfg.NodeName {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.members[n.Node]
	if !ok || e.member.Addr != n.Addr {
		return false
	}
	switch e.member.State {
	case Alive, Suspect:
		if e.leaving {
			return false
		}
		e.leaving = true
		return true
	case Failed:
		// The failure report came first; the node did leave gracefully.
		e.member.State = Left
		m.events.push(Event{Kind: Leave, Member: e.member})
		return true
	}
	return false
}
