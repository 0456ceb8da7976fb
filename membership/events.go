package membership

import (
	"strconv"
	"sync"
	"time"
)

// State is the state of a member as seen by the local node.
type State int

const (
	// Alive: the member answers probes or was heard from recently.
	Alive State = iota
	// Suspect is reserved for a member that failed probes but is not yet
	// declared dead. memberlist does not report suspicion to its delegates,
	// so this package currently never sets it.
	Suspect
	// Failed: gossip declared the member dead without a graceful leave.
	Failed
	// Left: the member left gracefully (Leave).
	Left
)

// String returns the lower-case name of the state.
func (s State) String() string {
	switch s {
	case Alive:
		return "alive"
	case Suspect:
		return "suspect"
	case Failed:
		return "failed"
	case Left:
		return "left"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// EventKind says what happened to a member.
type EventKind int

const (
	// Join: a member became alive (first seen, or back after Failed/Left).
	Join EventKind = iota
	// Update: an alive member changed its Meta (or address).
	Update
	// Leave: a member left gracefully. It may follow a Fail for the same
	// member when the leave notice arrived after the failure report.
	Leave
	// Fail: gossip reported the member dead.
	Fail
)

// String returns the lower-case name of the event kind.
func (k EventKind) String() string {
	switch k {
	case Join:
		return "join"
	case Update:
		return "update"
	case Leave:
		return "leave"
	case Fail:
		return "fail"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Member is a node of the gossip pool as seen by the local node.
type Member struct {
	// Name is the node name, unique in the pool.
	Name string
	// Addr is the gossip address, host:port.
	Addr string
	// Meta is the metadata the node gossips.
	Meta Meta
	// State is the member's state.
	State State
	// Since is when State last changed, by the local clock.
	Since time.Time
}

// Event reports a change of a member; Member is the member just after it.
type Event struct {
	// Kind is what happened.
	Kind EventKind
	// Member is the member's state after the change.
	Member Member
}

// eventQueue is an unbounded FIFO: push never blocks (gossip callbacks call
// it), and a single goroutine (run) drains it into out.
type eventQueue struct {
	mu     sync.Mutex
	buf    []Event
	closed bool
	signal chan struct{} // capacity 1: "buf may be non-empty"
	out    chan Event
}

func newEventQueue() *eventQueue {
	return &eventQueue{signal: make(chan struct{}, 1), out: make(chan Event)}
}

// push appends e; it is dropped once the queue is closed.
func (q *eventQueue) push(e Event) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.buf = append(q.buf, e)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// take removes and returns every queued event.
func (q *eventQueue) take() []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.buf
	q.buf = nil
	return b
}

// run delivers events to out in order until done is closed, then drops what
// is left and closes out.
func (q *eventQueue) run(done <-chan struct{}) {
	defer func() {
		q.mu.Lock()
		q.closed = true
		q.buf = nil
		q.mu.Unlock()
		close(q.out)
	}()
	for {
		select {
		case <-q.signal:
		case <-done:
			return
		}
		for _, e := range q.take() {
			select {
			case q.out <- e:
			case <-done:
				return
			}
		}
	}
}
