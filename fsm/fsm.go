package fsm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"
)

// SnapshotVersion is the version byte in front of every snapshot.
const SnapshotVersion = 1

// MaxSnapshotSize bounds the snapshot Restore accepts, in bytes.
const MaxSnapshotSize = 1 << 30

// Result is what Apply returns for each log entry (raft hands it back to
// the proposer through ApplyFuture.Response).
type Result struct {
	// Err is non-nil when the command was rejected; the state is unchanged.
	Err error
}

// FSM is the replicated state machine. It implements raft.FSM. The zero
// value is not usable; call New.
type FSM struct {
	view atomic.Pointer[View]
}

// New returns an empty FSM at index 0.
func New() *FSM {
	f := &FSM{}
	f.view.Store(&View{changed: make(chan struct{})})
	return f
}

// View returns the current immutable view. It never blocks.
func (f *FSM) View() *View { return f.view.Load() }

// Wait blocks until the applied index reaches index or ctx ends, and returns
// the first view at or past index.
func (f *FSM) Wait(ctx context.Context, index uint64) (*View, error) {
	for {
		v := f.view.Load()
		if v.index >= index {
			return v, nil
		}
		select {
		case <-v.changed:
		case <-ctx.Done():
			return v, ctx.Err()
		}
	}
}

// publish swaps in a new view built from st at index and wakes waiters.
func (f *FSM) publish(index uint64, st state) {
	old := f.view.Load()
	f.view.Store(&View{index: index, st: st, changed: make(chan struct{})})
	close(old.changed)
}

// Apply applies one committed log entry. It implements raft.FSM and returns a
// Result. It never panics on malformed input: the entry is consumed and the
// Result carries the error.
func (f *FSM) Apply(l *raft.Log) any {
	cur := f.view.Load()
	if l.Type != raft.LogCommand {
		f.publish(max(l.Index, cur.index), cur.st)
		return Result{}
	}
	c, err := Decode(l.Data)
	if err != nil {
		f.publish(l.Index, cur.st)
		return Result{Err: err}
	}
	next, err := apply(cur.st, l.Index, c)
	if err != nil {
		f.publish(l.Index, cur.st)
		return Result{Err: err}
	}
	f.publish(l.Index, next)
	return Result{}
}

// apply computes the state after c. It returns a new state value and leaves
// st untouched (views share st's substructures).
func apply(st state, index uint64, c Command) (state, error) {
	switch c.Op {
	case OpNoop:
		return st, nil
	case OpInitCluster:
		return applyInit(st, index, c.Init)
	default:
		return st, fmt.Errorf("%w: %d", ErrUnknownOp, c.Op)
	}
}

func applyInit(st state, index uint64, in *InitCluster) (state, error) {
	if in.ClusterID == "" || in.Shards == 0 {
		return st, fmt.Errorf("%w: init-cluster needs an ID and a positive shard count", ErrMalformed)
	}
	if st.Cluster.ID != "" {
		if st.Cluster.ID == in.ClusterID {
			return st, nil
		}
		return st, fmt.Errorf("%w: cluster is %s, not %s", ErrConflict, st.Cluster.ID, in.ClusterID)
	}
	st.Cluster = Cluster{
		ID:           in.ClusterID,
		Shards:       in.Shards,
		Voters:       in.Voters,
		CreatedBy:    in.CreatedBy,
		CreatedIndex: index,
	}
	return st, nil
}

// snapshotData is the encoded form of a snapshot.
type snapshotData struct {
	Index uint64 `msgpack:"index"`
	State state  `msgpack:"state"`
}

// Snapshot implements raft.FSM. The returned snapshot captures the current
// view; it is immutable, so Persist may run concurrently with Apply.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	v := f.view.Load()
	return &snapshot{data: snapshotData{Index: v.index, State: v.st}}, nil
}

// Restore implements raft.FSM: it replaces the state with the snapshot read
// from rc. A snapshot that is malformed or too large is an error and leaves
// the state unchanged.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxSnapshotSize+1))
	if err != nil {
		return err
	}
	d, err := decodeSnapshot(b)
	if err != nil {
		return err
	}
	f.publish(d.Index, d.State)
	return nil
}

// EncodeSnapshot returns the encoding of the FSM's current state, as
// Snapshot would persist it.
func (f *FSM) EncodeSnapshot() ([]byte, error) {
	v := f.view.Load()
	return encodeSnapshot(snapshotData{Index: v.index, State: v.st})
}

func encodeSnapshot(d snapshotData) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(SnapshotVersion)
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeSnapshot parses a snapshot's bytes. It never panics.
func decodeSnapshot(b []byte) (snapshotData, error) {
	if len(b) > MaxSnapshotSize {
		return snapshotData{}, fmt.Errorf("%w: snapshot of %d bytes", ErrTooLarge, len(b))
	}
	if len(b) < 1 {
		return snapshotData{}, fmt.Errorf("%w: empty snapshot", ErrMalformed)
	}
	if b[0] != SnapshotVersion {
		return snapshotData{}, fmt.Errorf("%w: snapshot version %d", ErrUnknownVersion, b[0])
	}
	var d snapshotData
	if err := decodeBody(b[1:], &d); err != nil {
		return snapshotData{}, err
	}
	return d, nil
}

type snapshot struct{ data snapshotData }

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	b, err := encodeSnapshot(s.data)
	if err == nil {
		_, err = sink.Write(b)
	}
	if err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *snapshot) Release() {}
