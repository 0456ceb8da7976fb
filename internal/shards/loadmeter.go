package shards

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
)

// MaxLoadReports bounds the shard loads one keepalive carries (about 10
// bytes each, far below an RPC frame); a node that owns more sends them in
// turns, the next ones on the next keepalive.
const MaxLoadReports = 16384

// LoadMeter is an owner's side of load reporting: the smoothed load of
// each shard this node reports on, an exponentially weighted moving
// average whose weight halves every half-life. It is safe for concurrent
// use. The zero value is not usable: use NewLoadMeter.
type LoadMeter struct {
	halfLife time.Duration
	mu       sync.Mutex
	loads    map[uint32]ewma
	cursor   uint32 // the first shard of the next report, when they take turns
}

type ewma struct {
	value float64
	at    time.Time
}

// NewLoadMeter returns a meter whose averages have the given half-life
// (<= 0: no smoothing, the last report counts).
func NewLoadMeter(halfLife time.Duration) *LoadMeter {
	return &LoadMeter{halfLife: halfLife, loads: map[uint32]ewma{}}
}

// Observe takes a report of shard's current load at now: the first one
// sets the average, a later one moves it towards the report by
// 1-2^(-elapsed/halfLife). A negative, NaN or infinite load is ignored.
func (m *LoadMeter) Observe(shard uint32, load float64, now time.Time) {
	if math.IsNaN(load) || math.IsInf(load, 0) || load < 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.loads[shard]
	if ok && m.halfLife > 0 {
		dt := max(now.Sub(e.at), 0)
		alpha := 1 - math.Exp2(-float64(dt)/float64(m.halfLife))
		e.value += alpha * (load - e.value)
	} else {
		e.value = load
	}
	e.at = now
	m.loads[shard] = e
}

// Forget drops shard's average (its lease ended: this node no longer
// reports on it).
func (m *LoadMeter) Forget(shard uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.loads, shard)
}

// Report returns the averages to send with a keepalive, in shard order: all
// of them, or MaxLoadReports of them starting after the previous report's
// last when there are more.
func (m *LoadMeter) Report() (shards []uint32, loads []float32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.loads) == 0 {
		return nil, nil
	}
	ids := make([]uint32, 0, len(m.loads))
	for s := range m.loads {
		ids = append(ids, s)
	}
	slices.Sort(ids)
	if len(ids) > MaxLoadReports {
		start, _ := slices.BinarySearch(ids, m.cursor)
		ids = append(ids[start:], ids[:start]...)[:MaxLoadReports]
		m.cursor = ids[len(ids)-1] + 1
	}
	loads = make([]float32, len(ids))
	for i, s := range ids {
		loads[i] = float32(m.loads[s].value)
	}
	return ids, loads
}

// LoadBook is the leader's memory of the loads its sessions reported on
// keepalives. It is never committed: a new leader starts empty and plans by
// count until reports reach it. It is safe for concurrent use.
type LoadBook struct {
	mu    sync.Mutex
	entry []bookEntry // by shard
}

type bookEntry struct {
	session string
	load    float64
}

// Record notes the loads that session reported for shards. Entries that
// are out of range, or not a finite load >= 0, are ignored; the lists are
// read pairwise up to the shorter one's length.
func (b *LoadBook) Record(session string, shards []uint32, loads []float32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range min(len(shards), len(loads)) {
		s, l := shards[i], float64(loads[i])
		if math.IsNaN(l) || math.IsInf(l, 0) || l < 0 || s >= fsm.MaxShards {
			continue
		}
		if int(s) >= len(b.entry) {
			b.entry = slices.Grow(b.entry, int(s)+1-len(b.entry))[:int(s)+1]
		}
		b.entry[s] = bookEntry{session: session, load: l}
	}
}

// Loads returns, in dst (resized to n), each shard's last reported load,
// or -1 for a shard no session has reported on (none at all while no
// session ever reported: an empty dst): the planner's
// Params.Load. The load is the shard's, not its owner's: after a handoff
// the previous owner's last report stands until the new owner's first
// replaces it (counting a moved shard as unreported, the mean, until then
// would make every move change the loads the next round plans on, and at
// scale the rounds would chase their own moves).
func (b *LoadBook) Loads(n int, dst []float64) []float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.entry) == 0 {
		// Nothing was ever reported: an empty slice, which the planner reads
		// as it reads n times -1 (balance by count), without n floats kept
		// on the leader (0.8 MB at 100,000 shards).
		return dst[:0]
	}
	dst = slices.Grow(dst[:0], n)[:n]
	for s := range dst {
		dst[s] = -1
		if s < len(b.entry) && b.entry[s].session != "" {
			dst[s] = b.entry[s].load
		}
	}
	return dst
}
