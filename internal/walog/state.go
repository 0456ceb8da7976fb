package walog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// stateFile holds the log's own record (its ID, which segment files make
// it up) and the stable store's keys. It is two slots of slotSize bytes,
// each a whole copy with a sequence number and a checksum, overwritten in
// place: a write needs no new space, and a torn or corrupt slot leaves the
// other.
const stateFile = "state"

const (
	slotSize   = 4096
	slotHeader = 8 + 8 + 4 + 4 // magic, seq, body length, checksum
	maxBody    = slotSize - slotHeader
)

var slotMagic = [8]byte{'H', 'F', 'W', 'A', 'L', 'S', 'T', '2'}

// state is what the state file holds.
type state struct {
	seq   uint64 // the slots' sequence number, one more per write
	logID uint64 // random, in every segment header too
	// The segment files of the log are first..next-1 (none when equal);
	// those up to legacy are of format 1.
	first, next, legacy uint64
	kv                  map[string][]byte
}

func (s *state) clone() *state {
	c := *s
	c.kv = make(map[string][]byte, len(s.kv))
	for k, v := range s.kv {
		c.kv[k] = v
	}
	return &c
}

// encodeSlot is s as one slot.
func (s *state) encodeSlot() ([]byte, error) {
	body := binary.LittleEndian.AppendUint64(nil, s.logID)
	body = binary.LittleEndian.AppendUint64(body, s.first)
	body = binary.LittleEndian.AppendUint64(body, s.next)
	body = binary.LittleEndian.AppendUint64(body, s.legacy)
	keys := make([]string, 0, len(s.kv))
	for k := range s.kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	body = binary.AppendUvarint(body, uint64(len(keys)))
	for _, k := range keys {
		body = binary.AppendUvarint(body, uint64(len(k)))
		body = append(body, k...)
		body = binary.AppendUvarint(body, uint64(len(s.kv[k])))
		body = append(body, s.kv[k]...)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("walog: the stable keys take %d bytes, more than the %d a state slot holds", len(body), maxBody)
	}
	slot := make([]byte, slotSize)
	copy(slot, slotMagic[:])
	binary.LittleEndian.PutUint64(slot[8:], s.seq)
	binary.LittleEndian.PutUint32(slot[16:], uint32(len(body)))
	copy(slot[slotHeader:], body)
	binary.LittleEndian.PutUint32(slot[20:], slotSum(slot, len(body)))
	return slot, nil
}

func slotSum(slot []byte, n int) uint32 {
	c := crc32.Checksum(slot[8:20], castagnoli)
	return crc32.Update(c, castagnoli, slot[slotHeader:slotHeader+n])
}

// decodeSlot reads one slot; errBadRecord when it is not a whole, valid
// one.
func decodeSlot(slot []byte) (*state, error) {
	if len(slot) != slotSize || !bytes.Equal(slot[:8], slotMagic[:]) {
		return nil, errBadRecord
	}
	n := int(binary.LittleEndian.Uint32(slot[16:]))
	if n > maxBody || n < 33 || slotSum(slot, n) != binary.LittleEndian.Uint32(slot[20:]) {
		return nil, errBadRecord
	}
	b := slot[slotHeader : slotHeader+n]
	s := &state{seq: binary.LittleEndian.Uint64(slot[8:]), kv: map[string][]byte{}}
	s.logID = binary.LittleEndian.Uint64(b)
	s.first = binary.LittleEndian.Uint64(b[8:])
	s.next = binary.LittleEndian.Uint64(b[16:])
	s.legacy = binary.LittleEndian.Uint64(b[24:])
	count, k := binary.Uvarint(b[32:])
	if k <= 0 || s.first > s.next || s.legacy >= s.next && s.legacy != 0 {
		return nil, errBadRecord
	}
	rest := b[32+k:]
	for range count {
		key, r, err := takeBytes(rest, true)
		if err != nil {
			return nil, err
		}
		val, r, err := takeBytes(r, true)
		if err != nil {
			return nil, err
		}
		s.kv[string(key)], rest = val, r
	}
	if len(rest) != 0 {
		return nil, errBadRecord
	}
	return s, nil
}

// stateStore is the open state file.
type stateStore struct {
	fsys FS
	path string
	f    File
	cur  *state
	// differ is set when open found the slots different (one torn or
	// corrupt): heal rewrites both.
	differ bool
}

// readState reads the state file at path: the valid slot of the higher
// sequence number. Both slots bad is a CorruptError; a missing file is
// fs.ErrNotExist.
func readState(fsys FS, path string, write bool) (*stateStore, error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR
	}
	f, err := fsys.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	if size != 2*slotSize {
		f.Close()
		return nil, corrupt(path, -1, "is %d bytes, not the %d of two state slots", size, 2*slotSize)
	}
	buf := make([]byte, 2*slotSize)
	if _, err := f.ReadAt(buf, 0); err != nil {
		f.Close()
		return nil, err
	}
	a, errA := decodeSlot(buf[:slotSize])
	b, errB := decodeSlot(buf[slotSize:])
	st := &stateStore{fsys: fsys, path: path, f: f}
	switch {
	case errA != nil && errB != nil:
		f.Close()
		return nil, corrupt(path, -1, "both copies of the term, the vote and the segment list fail their checksums")
	case errA != nil:
		st.cur, st.differ = b, true
	case errB != nil:
		st.cur, st.differ = a, true
	case a.seq >= b.seq:
		st.cur, st.differ = a, a.seq != b.seq
	default:
		st.cur, st.differ = b, true
	}
	return st, nil
}

// createState writes a new state file holding s (through a temporary
// file, renamed into place, the directory synced).
func createState(fsys FS, path string, s *state) (*stateStore, error) {
	slot, err := s.encodeSlot()
	if err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("walog: creating %s: %w", tmp, err)
	}
	fail := func(err error) (*stateStore, error) {
		f.Close()
		fsys.Remove(tmp)
		return nil, fmt.Errorf("walog: creating %s: %w", path, err)
	}
	if err := f.Allocate(0, 2*slotSize); err != nil && !errors.Is(err, ErrUnsupported) {
		return fail(err)
	}
	if _, err := f.WriteAt(append(slot, slot...), 0); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fail(err)
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return nil, fmt.Errorf("walog: syncing %s: %w", filepath.Dir(path), err)
	}
	return &stateStore{fsys: fsys, path: path, f: f, cur: s}, nil
}

// writeFailure is a state write that failed, undone or not.
type writeFailure struct {
	err    error // the write's failure
	undone bool  // the files were put back as before
}

// write makes next the durable state: next.seq is set past the current
// one, then the second slot and the first are each overwritten and synced
// (at every moment one of them holds the current state or next). On
// failure it puts both slots back to the current state; if that fails too
// the returned failure is not undone, and the caller must refuse every
// later write.
func (st *stateStore) write(next *state) *writeFailure {
	next.seq = st.cur.seq + 1
	if _, err := next.encodeSlot(); err != nil {
		return &writeFailure{err: err, undone: true}
	}
	if err := st.writeSlots(next); err != nil {
		back := st.cur.clone()
		back.seq = next.seq + 1
		if err2 := st.writeSlots(back); err2 != nil {
			return &writeFailure{err: fmt.Errorf("walog: writing %s: %w (and putting it back: %v)", st.path, err, err2)}
		}
		st.cur, st.differ = back, false
		return &writeFailure{err: fmt.Errorf("walog: writing %s: %w", st.path, err), undone: true}
	}
	st.cur, st.differ = next, false
	return nil
}

func (st *stateStore) writeSlots(s *state) error {
	slot, err := s.encodeSlot()
	if err != nil {
		return err
	}
	for _, off := range []int64{slotSize, 0} {
		if _, err := st.f.WriteAt(slot, off); err != nil {
			return err
		}
		if err := st.f.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// heal rewrites both slots with the current state when open found them
// different.
func (st *stateStore) heal() error {
	if !st.differ {
		return nil
	}
	if err := st.writeSlots(st.cur); err != nil {
		return fmt.Errorf("walog: rewriting %s: %w", st.path, err)
	}
	st.differ = false
	return nil
}

func (st *stateStore) close() error { return st.f.Close() }

// missing reports whether err says a file does not exist.
func missing(err error) bool { return errors.Is(err, fs.ErrNotExist) }
