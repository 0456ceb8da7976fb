package walog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// errNotFound is what raft expects, by its text, for a key never set.
var errNotFound = errors.New("not found")

// Set stores a stable key (raft's term and vote): it is on disk when Set
// returns, after any append whose sync was deferred. A value equal to the
// stored one writes nothing. On failure the
// key keeps its value, on disk too; if even putting the file back fails,
// every later write fails.
func (l *Log) Set(key, val []byte) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if err := l.flushLocked(); err != nil {
		return err
	}
	if old, ok := l.st.cur.kv[string(key)]; ok && bytes.Equal(old, val) {
		return nil
	}
	next := l.st.cur.clone()
	next.kv[string(key)] = append([]byte(nil), val...)
	if err := l.writeState(next); err != nil {
		return err
	}
	l.mu.Lock()
	l.kv = next.kv
	l.mu.Unlock()
	return nil
}

// Get returns a stable key's value, or an error reading "not found".
func (l *Log) Get(key []byte) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if err := l.errIfClosed(); err != nil {
		return nil, err
	}
	v, ok := l.kv[string(key)]
	if !ok {
		return nil, errNotFound
	}
	return append([]byte(nil), v...), nil
}

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
