package walog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/holdfast-go/holdfast/internal/atomicfile"
)

// stableFile holds the stable store's keys and values.
const stableFile = "stable"

// errNotFound is what raft expects, by its text, for a key never set.
var errNotFound = errors.New("not found")

// stable is the stable store: a few keys, rewritten as a whole on each Set.
type stable struct {
	path string
	mu   sync.Mutex
	kv   map[string][]byte
}

func openStable(path string) (*stable, error) {
	s := &stable{path: path, kv: map[string][]byte{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	for len(b) > 0 {
		k, rest, err := takeBytes(b)
		if err != nil {
			return nil, fmt.Errorf("walog: %s is corrupt", path)
		}
		v, rest, err := takeBytes(rest)
		if err != nil {
			return nil, fmt.Errorf("walog: %s is corrupt", path)
		}
		s.kv[string(k)], b = v, rest
	}
	return s, nil
}

// set stores key's value and writes the file before returning.
func (s *stable) set(key, val []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string][]byte, len(s.kv)+1)
	for k, v := range s.kv {
		next[k] = v
	}
	next[string(key)] = append([]byte(nil), val...)
	keys := make([]string, 0, len(next))
	for k := range next {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []byte
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(next[k])))
		b = append(b, next[k]...)
	}
	if err := atomicfile.Write(s.path, b); err != nil {
		return fmt.Errorf("walog: writing %s: %w", s.path, err)
	}
	s.kv = next
	return nil
}

func (s *stable) get(key []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[string(key)]
	if !ok {
		return nil, errNotFound
	}
	return append([]byte(nil), v...), nil
}

// Set stores a stable key (raft's term and vote); it is on disk when Set
// returns.
func (l *Log) Set(key, val []byte) error { return l.stable.set(key, val) }

// Get returns a stable key's value, or an error reading "not found".
func (l *Log) Get(key []byte) ([]byte, error) { return l.stable.get(key) }

// SetUint64 stores a stable key holding a number.
func (l *Log) SetUint64(key []byte, val uint64) error {
	return l.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns a stable key holding a number (0 and "not found" if
// never set).
func (l *Log) GetUint64(key []byte) (uint64, error) {
	v, err := l.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("walog: stable key %q holds %d bytes, not a number", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
