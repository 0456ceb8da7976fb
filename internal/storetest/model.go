package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/hashicorp/raft"
)

// Store is what the suite drives: raft's log and stable stores in one,
// closable (walog.Log; raft-boltdb's BoltStore).
type Store interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// Keys are the stable keys the workload sets (raft's own).
var Keys = []string{"CurrentTerm", "LastVoteTerm", "LastVoteCand"}

// Model is what a store acknowledged: its entries first..last and stable
// keys, and the entries a compaction dropped that a reopened store may
// still show (a store may compact by whole files).
type Model struct {
	First, Last uint64
	Entries     map[uint64]*raft.Log
	Compacted   map[uint64]*raft.Log
	KV          map[string][]byte
}

// NewModel is an empty store's model.
func NewModel() *Model {
	return &Model{Entries: map[uint64]*raft.Log{}, Compacted: map[uint64]*raft.Log{}, KV: map[string][]byte{}}
}

// Clone is a copy of m (the entries are never changed, so shared).
func (m *Model) Clone() *Model {
	c := &Model{First: m.First, Last: m.Last, Entries: make(map[uint64]*raft.Log, len(m.Entries)),
		Compacted: make(map[uint64]*raft.Log, len(m.Compacted)), KV: make(map[string][]byte, len(m.KV))}
	for k, v := range m.Entries {
		c.Entries[k] = v
	}
	for k, v := range m.Compacted {
		c.Compacted[k] = v
	}
	for k, v := range m.KV {
		c.KV[k] = v
	}
	return c
}

// OpKind is a kind of store call.
type OpKind int

// The calls the workload makes.
const (
	OpStoreLogs OpKind = iota
	OpDeletePrefix
	OpDeleteSuffix
	OpDeleteAll
	OpSet
	OpReopen
)

// String names the kind.
func (k OpKind) String() string {
	return [...]string{"store", "compact", "truncate-suffix", "delete-all", "set", "reopen"}[k]
}

// StoreOp is one call of the workload.
type StoreOp struct {
	Kind     OpKind
	Logs     []*raft.Log
	Min, Max uint64
	Key      string
	Val      []byte
}

// String describes the call.
func (o StoreOp) String() string {
	switch o.Kind {
	case OpStoreLogs:
		return fmt.Sprintf("StoreLogs(%d..%d term %d)", o.Logs[0].Index, o.Logs[len(o.Logs)-1].Index, o.Logs[0].Term)
	case OpSet:
		return fmt.Sprintf("Set(%s, %x)", o.Key, o.Val)
	case OpReopen:
		return "reopen"
	}
	return fmt.Sprintf("DeleteRange(%d, %d) [%v]", o.Min, o.Max, o.Kind)
}

// Do makes the call on s (OpReopen is the caller's).
func (o StoreOp) Do(s Store) error {
	switch o.Kind {
	case OpStoreLogs:
		return s.StoreLogs(o.Logs)
	case OpSet:
		return s.Set([]byte(o.Key), o.Val)
	case OpReopen:
		return nil
	case OpDeletePrefix, OpDeleteAll:
		// As raft compacts and clears: from the store's first index (which
		// a store compacting by whole files may keep lower than the
		// model's).
		first, err := s.FirstIndex()
		if err != nil {
			return err
		}
		return s.DeleteRange(min(first, o.Min), o.Max)
	}
	return s.DeleteRange(o.Min, o.Max)
}

// Apply returns the model after o succeeded.
func (m *Model) Apply(o StoreOp) *Model {
	n := m.Clone()
	switch o.Kind {
	case OpStoreLogs:
		for _, l := range o.Logs {
			n.Entries[l.Index] = l
		}
		if n.First == 0 {
			n.First = o.Logs[0].Index
		}
		n.Last = o.Logs[len(o.Logs)-1].Index
	case OpDeletePrefix:
		for i := n.First; i <= o.Max; i++ {
			n.Compacted[i] = n.Entries[i]
			delete(n.Entries, i)
		}
		n.First = o.Max + 1
	case OpDeleteSuffix:
		for i := o.Min; i <= n.Last; i++ {
			delete(n.Entries, i)
		}
		n.Last = o.Min - 1
	case OpDeleteAll:
		n.Entries, n.Compacted, n.First, n.Last = map[uint64]*raft.Log{}, map[uint64]*raft.Log{}, 0, 0
	case OpSet:
		n.KV[o.Key] = o.Val
	}
	return n
}

// Observed is what a store shows: its range, every entry in it, the keys.
type Observed struct {
	First, Last uint64
	Entries     map[uint64]*raft.Log
	KV          map[string][]byte
}

// Observe reads everything s shows.
func Observe(s Store) (*Observed, error) {
	o := &Observed{Entries: map[uint64]*raft.Log{}, KV: map[string][]byte{}}
	var err error
	if o.First, err = s.FirstIndex(); err != nil {
		return nil, err
	}
	if o.Last, err = s.LastIndex(); err != nil {
		return nil, err
	}
	for i := o.First; i <= o.Last && i > 0; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			return nil, fmt.Errorf("entry %d of %d..%d: %w", i, o.First, o.Last, err)
		}
		o.Entries[i] = &l
	}
	for _, k := range Keys {
		v, err := s.Get([]byte(k))
		switch {
		case err == nil:
			o.KV[k] = v
		case err.Error() != "not found":
			return nil, fmt.Errorf("stable key %s: %w", k, err)
		}
	}
	return o, nil
}

// Model is o as the model a workload continues from.
func (o *Observed) Model() *Model {
	m := NewModel()
	m.First, m.Last = o.First, o.Last
	for k, v := range o.Entries {
		m.Entries[k] = v
	}
	for k, v := range o.KV {
		m.KV[k] = v
	}
	return m
}

// Failure kinds counted by the checks.
var (
	// ErrLost is an acknowledged entry (or key) a store no longer shows.
	ErrLost = errors.New("an acknowledged entry or key is lost")
	// ErrStale is an entry (or key) a store shows that it did not
	// acknowledge, that was deleted, or that differs from what was stored.
	ErrStale = errors.New("a stale or unacknowledged entry or key came back")
)

// Outcome is what a store may show after a call: exactly the model
// after it or before it, or (a crash in the middle, or a failure not
// undone) anything in between that the call could have left.
type Outcome int

// The outcomes.
const (
	Done Outcome = iota
	NotDone
	InFlight
)

// Check returns nil if o is what a store may show after op took the model
// from before to after with outcome out; else an error wrapping ErrLost or
// ErrStale that says where.
func Check(o *Observed, before, after *Model, op StoreOp, out Outcome) error {
	switch out {
	case Done:
		return same(o, after, after.Last, after.Last)
	case NotDone:
		return same(o, before, before.Last, before.Last)
	}
	switch op.Kind {
	case OpStoreLogs:
		if err := same(o, before, before.Last, after.Last); err != nil {
			return err
		}
		if before.Last == 0 && o.Last != 0 && o.First != op.Logs[0].Index {
			return fmt.Errorf("%w: the log starts at %d, the first entry stored was %d", ErrStale, o.First, op.Logs[0].Index)
		}
		return checkRange(o, after, max(before.Last+1, o.First), o.Last, nil)
	case OpDeleteSuffix:
		return same(o, before, op.Min-1, before.Last)
	case OpDeleteAll:
		if o.Last == 0 && o.First == 0 {
			return sameKV(o, before, nil)
		}
		return same(o, before, before.Last, before.Last)
	case OpDeletePrefix:
		return same(o, after, after.Last, after.Last)
	case OpSet:
		if err := sameLog(o, before, before.Last, before.Last); err != nil {
			return err
		}
		return sameKV(o, before, after)
	}
	return same(o, after, after.Last, after.Last)
}

// same checks that o shows m's entries and keys with its last index in
// [lo, hi] (entries past m.Last are checked by the caller).
func same(o *Observed, m *Model, lo, hi uint64) error {
	if err := sameLog(o, m, lo, hi); err != nil {
		return err
	}
	return sameKV(o, m, nil)
}

func sameLog(o *Observed, m *Model, lo, hi uint64) error {
	switch {
	case o.Last < lo:
		return fmt.Errorf("%w: the log ends at %d, want at least %d (model %d..%d)", ErrLost, o.Last, lo, m.First, m.Last)
	case o.Last > hi:
		return fmt.Errorf("%w: the log ends at %d, want at most %d (model %d..%d)", ErrStale, o.Last, hi, m.First, m.Last)
	case m.First == 0 && o.Last > hi:
		return fmt.Errorf("%w: the log holds %d..%d, want it empty", ErrStale, o.First, o.Last)
	case o.Last > 0 && m.First > 0 && o.First > m.First:
		return fmt.Errorf("%w: the log starts at %d, want %d or earlier", ErrLost, o.First, m.First)
	}
	return checkRange(o, m, o.First, min(o.Last, m.Last), m.Compacted)
}

// checkRange checks o's entries from..to against m's (or, before m.First,
// against those a compaction dropped).
func checkRange(o *Observed, m *Model, from, to uint64, compacted map[uint64]*raft.Log) error {
	var prev uint64
	for i := from; i <= to && i > 0; i++ {
		want, ok := m.Entries[i]
		if !ok && compacted != nil {
			want, ok = compacted[i]
		}
		got := o.Entries[i]
		if !ok || got == nil || !sameEntry(got, want) {
			return fmt.Errorf("%w: entry %d is %s, want %s", ErrStale, i, describe(got), describe(want))
		}
		if got.Term < prev {
			return fmt.Errorf("%w: entry %d has term %d after term %d", ErrStale, i, got.Term, prev)
		}
		prev = got.Term
	}
	return nil
}

// sameKV checks o's keys: m's, or alt's where given.
func sameKV(o *Observed, m, alt *Model) error {
	keys := map[string]bool{}
	for k := range o.KV {
		keys[k] = true
	}
	for k := range m.KV {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		got, gok := o.KV[k]
		want, wok := m.KV[k]
		if gok == wok && bytes.Equal(got, want) {
			continue
		}
		if alt != nil {
			if a, aok := alt.KV[k]; gok == aok && bytes.Equal(got, a) {
				continue
			}
		}
		if !gok {
			return fmt.Errorf("%w: stable key %s is gone, want %x", ErrLost, k, want)
		}
		return fmt.Errorf("%w: stable key %s is %x, want %x", ErrStale, k, got, want)
	}
	return nil
}

func sameEntry(a, b *raft.Log) bool {
	return b != nil && a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		bytes.Equal(a.Data, b.Data) && bytes.Equal(a.Extensions, b.Extensions) && a.AppendedAt.Equal(b.AppendedAt)
}

func describe(l *raft.Log) string {
	if l == nil {
		return "absent"
	}
	return fmt.Sprintf("(index %d, term %d, %d bytes)", l.Index, l.Term, len(l.Data))
}
