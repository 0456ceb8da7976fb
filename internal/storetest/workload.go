package storetest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/raft"
)

// Workload makes a random sequence of calls as raft makes them: batches
// appended at the current term; a new term (and often a vote) now and
// then; a conflicting suffix deleted by a newer term's leader and written
// again; compaction of a prefix; the whole log replaced after a snapshot
// install; reopens.
type Workload struct {
	rng   *rand.Rand
	term  uint64
	queue []StoreOp
	salt  uint64
}

// NewWorkload returns a workload drawing from rng.
func NewWorkload(rng *rand.Rand) *Workload { return &Workload{rng: rng, term: 1} }

// Next is the next call for a store whose model is m.
func (w *Workload) Next(m *Model) StoreOp {
	if len(w.queue) > 0 {
		op := w.queue[0]
		w.queue = w.queue[1:]
		return op
	}
	r := w.rng.IntN(100)
	switch {
	case m.Last == 0:
		from := uint64(1)
		if w.rng.IntN(3) == 0 {
			from = uint64(1 + w.rng.IntN(5000))
		}
		return w.batch(from)
	case r < 55:
		return w.batch(m.Last + 1)
	case r < 63:
		return w.newTerm(w.rng.IntN(2) == 0)
	case r < 73 && m.Last > m.First:
		// A new leader overwrites a conflicting suffix: a new term first.
		from := m.First + 1 + uint64(w.rng.IntN(int(m.Last-m.First)))
		op := w.newTerm(false)
		w.queue = append(w.queue, StoreOp{Kind: OpDeleteSuffix, Min: from, Max: m.Last}, w.batch(from))
		return op
	case r < 85 && m.Last > m.First:
		return StoreOp{Kind: OpDeletePrefix, Min: m.First, Max: m.First + uint64(w.rng.IntN(int(m.Last-m.First)))}
	case r < 87:
		// A snapshot installed: the log replaced, continuing further on.
		w.queue = append(w.queue, w.batch(m.Last+uint64(2+w.rng.IntN(100))))
		return StoreOp{Kind: OpDeleteAll, Min: m.First, Max: m.Last}
	case r < 92:
		return StoreOp{Kind: OpReopen}
	}
	return w.batch(m.Last + 1)
}

// newTerm sets the next term, then (vote) a vote in it.
func (w *Workload) newTerm(vote bool) StoreOp {
	w.term++
	if vote {
		w.queue = append(w.queue,
			StoreOp{Kind: OpSet, Key: "LastVoteTerm", Val: binary.BigEndian.AppendUint64(nil, w.term)},
			StoreOp{Kind: OpSet, Key: "LastVoteCand", Val: []byte(fmt.Sprintf("node-%d", w.rng.IntN(5)))})
	}
	return StoreOp{Kind: OpSet, Key: "CurrentTerm", Val: binary.BigEndian.AppendUint64(nil, w.term)}
}

// batch appends 1 to 8 entries from index from at the current term, of
// sizes from a few bytes to a few sectors.
func (w *Workload) batch(from uint64) StoreOp {
	n := 1 + w.rng.IntN(8)
	logs := make([]*raft.Log, n)
	for i := range logs {
		w.salt++
		size := w.rng.IntN(120)
		if w.rng.IntN(10) == 0 {
			size = 400 + w.rng.IntN(2000)
		}
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(w.salt*31 + uint64(j)*7)
		}
		l := &raft.Log{Index: from + uint64(i), Term: w.term, Type: raft.LogCommand, Data: data}
		if w.rng.IntN(4) == 0 {
			l.AppendedAt = time.Unix(1700000000, int64(w.salt))
		}
		if w.rng.IntN(8) == 0 {
			l.Type, l.Extensions = raft.LogConfiguration, []byte{byte(w.salt), 1, 2}
		}
		logs[i] = l
	}
	return StoreOp{Kind: OpStoreLogs, Logs: logs}
}

// Reset drops the calls queued after one that failed (they assumed it
// succeeded).
func (w *Workload) Reset() { w.queue = nil }
