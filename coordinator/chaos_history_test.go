package coordinator_test

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// The history of one TestChaos seed. Every time comes from time.Now() in
// this one process, so all nodes share one monotonic clock.

// chaosGrant is one lease handle: one successful Acquire.
type chaosGrant struct {
	name     string
	node     int
	nodeName string
	session  string // from the local replica right after Acquire returned ("" if it had moved on)
	token    uint64
	acquired time.Time // when Acquire returned
	// releaseAt is the instant just before the worker called Release. Release
	// cancels the lease's context before it sends the release, and no other
	// node can be granted the lease before the release commits, so when the
	// cause is ErrReleased the belief provably ended in [releaseAt, ended].
	releaseAt time.Time
	ended     time.Time // when Done() fired, seen by a context.AfterFunc (zero while held)
	cause     error     // Lease.Err() once ended
	// endedOnReturn is set when the lease had already ended when Acquire
	// returned it (shown in violations, for diagnosis).
	endedOnReturn bool
}

// beliefEnd is the latest instant the handle may have believed it held the
// lease (now while it is still held).
func (g *chaosGrant) beliefEnd(now time.Time) time.Time {
	switch {
	case g.ended.IsZero():
		return now
	case errors.Is(g.cause, coordinator.ErrReleased) && !g.releaseAt.IsZero():
		return g.releaseAt
	}
	return g.ended
}

// chaosWrite is one write attempt on the fenced register.
type chaosWrite struct {
	name     string
	node     int
	token    uint64
	at       time.Time
	accepted bool
	zombie   bool // deliberate write after Done() fired, without Checkpoint
	// heldAfter is set for a rejected correct write (Checkpoint passed just
	// before) when the lease was still held after the rejection.
	heldAfter bool
}

// chaosFault is one injected fault and the nodes it touched.
type chaosFault struct {
	kind     string
	nodes    []int
	from, to time.Time // to is zero until healed
}

type chaosHistory struct {
	t0 time.Time

	mu            sync.Mutex
	grants        []*chaosGrant
	writes        []chaosWrite
	accepted      map[string][]uint64 // resource → accepted tokens in acceptance order
	faults        []*chaosFault
	zombieSkipped int // zombie writes not attempted: no newer token reached the register in time
	// note, when set, is told of every grant, end and fault as it happens
	// (TestSimulation's trace).
	note func(format string, args ...any)
}

func newChaosHistory() *chaosHistory {
	return &chaosHistory{t0: time.Now(), accepted: map[string][]uint64{}}
}

// ms formats t relative to the start of the seed.
func (h *chaosHistory) ms(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%.1fms", float64(t.Sub(h.t0))/float64(time.Millisecond))
}

func (h *chaosHistory) addGrant(g *chaosGrant) {
	if h.note != nil {
		h.note("grant %s token %d node%d", g.name, g.token, g.node)
	}
	h.mu.Lock()
	h.grants = append(h.grants, g)
	h.mu.Unlock()
}

func (h *chaosHistory) releasing(g *chaosGrant, at time.Time) {
	h.mu.Lock()
	g.releaseAt = at
	h.mu.Unlock()
}

func (h *chaosHistory) endGrant(g *chaosGrant, at time.Time, cause error) {
	if h.note != nil {
		h.note("end %s token %d node%d: %v", g.name, g.token, g.node, cause)
	}
	h.mu.Lock()
	g.ended, g.cause = at, cause
	h.mu.Unlock()
}

func (h *chaosHistory) addWrite(w chaosWrite) {
	h.mu.Lock()
	h.writes = append(h.writes, w)
	h.mu.Unlock()
}

// acceptedWrite is called inside fence.Memory.Do, under the register's
// lock, so the order of calls is the order of acceptance.
func (h *chaosHistory) acceptedWrite(resource string, token uint64) {
	h.mu.Lock()
	h.accepted[resource] = append(h.accepted[resource], token)
	h.mu.Unlock()
}

func (h *chaosHistory) addFault(kind string, nodes []int) *chaosFault {
	f := &chaosFault{kind: kind, nodes: nodes, from: time.Now()}
	if h.note != nil {
		h.note("fault %s%v", kind, nodes)
	}
	h.mu.Lock()
	h.faults = append(h.faults, f)
	h.mu.Unlock()
	return f
}

func (h *chaosHistory) healFault(f *chaosFault) {
	if h.note != nil {
		h.note("healed %s%v", f.kind, f.nodes)
	}
	h.mu.Lock()
	f.to = time.Now()
	h.mu.Unlock()
}

func (h *chaosHistory) skipZombie() {
	h.mu.Lock()
	h.zombieSkipped++
	h.mu.Unlock()
}

func (h *chaosHistory) describe(g *chaosGrant, now time.Time) string {
	cause := "held"
	if g.cause != nil {
		cause = g.cause.Error()
	}
	dead := ""
	if g.endedOnReturn {
		dead = " ended-when-Acquire-returned"
	}
	return fmt.Sprintf("{%s token=%d node=%s session=%.8s acquired=%s releaseAt=%s ended=%s beliefEnd=%s cause=%q%s}",
		g.name, g.token, g.nodeName, g.session, h.ms(g.acquired), h.ms(g.releaseAt), h.ms(g.ended), h.ms(g.beliefEnd(now)), cause, dead)
}

// siblingNote explains (it does not excuse) a loss or an overlap of handle
// g: another handle of the same grant on the same node (a second Acquire
// of a session that already held the lease returns the same token) was
// released before g ended, releasing the grant g still believed in.
func (h *chaosHistory) siblingNote(handles []*chaosGrant, g *chaosGrant, now time.Time) string {
	for _, o := range handles {
		if o != g && o.node == g.node && !o.releaseAt.IsZero() && errors.Is(o.cause, coordinator.ErrReleased) && o.releaseAt.Before(g.beliefEnd(now)) {
			return fmt.Sprintf(" [shared grant: handle acquired at %s on %s released at %s while handle acquired at %s still believed]",
				h.ms(o.acquired), o.nodeName, h.ms(o.releaseAt), h.ms(g.acquired))
		}
	}
	return ""
}
