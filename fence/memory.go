package fence

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// MemoryConfig configures a Memory (NewMemory). The zero value is valid.
type MemoryConfig struct {
	// Registerer receives the Memory's metrics. Nil: the metrics are kept
	// but not registered. Several Memory instances on one Registerer share
	// the holdfast_fence_rejections_total{kind="memory"} series; instances
	// on different Registerers do not collide.
	Registerer prometheus.Registerer
}

// Memory is an in-memory fenced resource: a map from resource name to the
// highest token accepted for it. It is safe for concurrent use. The zero
// value is ready to use and has no metrics.
//
// Memory keeps one entry per resource name for its whole life; use a bounded
// set of names (lease names, shard IDs), not one per request.
type Memory struct {
	mu         sync.Mutex
	regs       map[string]*register
	rejections prometheus.Counter // nil in the zero value
}

// register is one resource's highest accepted token. mu orders Check and Do
// on the resource; highest is also read without mu by Highest.
type register struct {
	mu      sync.Mutex
	highest atomic.Uint64
}

// NewMemory returns an empty Memory configured by cfg. If the rejection
// counter cannot be registered because its name is taken by a different metric
// on the Registerer, the counter is kept unregistered: fencing never depends
// on metrics.
func NewMemory(cfg MemoryConfig) *Memory {
	c, err := newRejections(cfg.Registerer, kindMemory)
	if err != nil {
		c, _ = newRejections(nil, kindMemory)
	}
	return &Memory{regs: make(map[string]*register), rejections: c}
}

// reg returns the register of resource, creating it on first use.
func (m *Memory) reg(resource string) *register {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.regs[resource]
	if !ok {
		if m.regs == nil {
			m.regs = make(map[string]*register)
		}
		r = &register{}
		m.regs[resource] = r
	}
	return r
}

// admit accepts token if it is at least the highest accepted so far and
// records it. The caller holds r.mu.
func (m *Memory) admit(r *register, resource string, token uint64) error {
	if h := r.highest.Load(); token < h {
		if m.rejections != nil {
			m.rejections.Inc()
		}
		return &FencedError{Resource: resource, Token: token, Highest: h}
	}
	r.highest.Store(token)
	return nil
}

// Check accepts token for resource if it is at least the highest token
// accepted for that resource so far, and records it as the new highest. The
// same token may be presented any number of times. A lower token gets a
// *FencedError (errors.Is(err, ErrFenced)) carrying the highest token.
//
// Check alone only orders tokens: a write done after Check returns can still
// interleave with a write of a higher token. Use Do to make the check and the
// write one step.
func (m *Memory) Check(resource string, token uint64) error {
	r := m.reg(resource)
	r.mu.Lock()
	defer r.mu.Unlock()
	return m.admit(r, resource, token)
}

// Do runs write only if token is accepted for resource (as by Check), and
// holds the resource's lock until write returns, so that no other Check or Do
// on the same resource runs in between: once a higher token has been
// accepted, no write of a lower token can start, and none is in progress.
// Other resources are not blocked.
//
// The token is recorded when it is accepted, before write runs, and stays
// recorded if write fails: a partly done write must not be followed by a
// stale holder's. Do returns a *FencedError without calling write when the
// token is rejected, and otherwise write's error. write must not call Check
// or Do on the same resource (it would deadlock).
func (m *Memory) Do(resource string, token uint64, write func() error) error {
	r := m.reg(resource)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := m.admit(r, resource, token); err != nil {
		return err
	}
	return write()
}

// Highest returns the highest token accepted for resource, or 0 if none was.
// It does not wait for a Do in progress.
func (m *Memory) Highest(resource string) uint64 {
	m.mu.Lock()
	r, ok := m.regs[resource]
	m.mu.Unlock()
	if !ok {
		return 0
	}
	return r.highest.Load()
}
