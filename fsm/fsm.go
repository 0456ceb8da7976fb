package fsm

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// SnapshotVersion is the version byte in front of a snapshot that holds no
// holder value.
const SnapshotVersion = 1

// SnapshotValueVersion is the version byte in front of a snapshot in which
// a lease or a waiter carries a holder value: a release before it would
// restore such a snapshot without the values; under this version it
// refuses it (ErrUnknownVersion). The body is as under SnapshotVersion.
const SnapshotValueVersion = 2

// MaxSnapshotSize bounds the snapshot Restore accepts, in bytes.
const MaxSnapshotSize = 1 << 30

// Result is what Apply returns for each log entry (raft hands it back to
// the proposer through ApplyFuture.Response).
type Result struct {
	// Err is non-nil when the command was rejected. The state is unchanged,
	// except that a refused acquire (ErrLeaseHeld) still raises its
	// session's request mark.
	Err error
	// Noop is true when the command was valid but changed nothing (a
	// repeated request, an expiry of a session already gone).
	Noop bool
	// Token and Holder describe the lease after an acquire: the holder's
	// session and token (the caller's own on a grant).
	Token  uint64
	Holder string
	// Request is the holder's request that its grant answered.
	Request uint64
	// Queued is true when an acquire queued the session as a waiter.
	Queued bool
	// Stale is true when an acquire's request had already been given up or
	// superseded (a late or repeated copy): nothing changed.
	Stale bool
	// Count is how many items of a shard command took effect.
	Count int
}

// FSM is the replicated state machine. It implements raft.FSM. The zero
// value is not usable; call New.
type FSM struct {
	view atomic.Pointer[View]
	// items is Apply's buffer for the items of shard commands (Apply runs
	// on one goroutine, and no state keeps a command's items).
	items []ShardItem
}

// New returns an empty FSM at index 0.
func New() *FSM {
	f := &FSM{}
	f.view.Store(&View{changes: newChangeLog(0), changed: make(chan struct{})})
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

// publish swaps in a new view built from st at index, with the change log
// cl, and wakes waiters.
func (f *FSM) publish(index uint64, st state, cl changeLog) {
	old := f.view.Load()
	f.view.Store(&View{index: index, st: st, changes: cl, changed: make(chan struct{})})
	close(old.changed)
}

// Apply applies one committed log entry. It implements raft.FSM and returns a
// Result. It never panics on malformed input: the entry is consumed and the
// Result carries the error.
func (f *FSM) Apply(l *raft.Log) any {
	cur := f.view.Load()
	if l.Type != raft.LogCommand {
		f.publish(max(l.Index, cur.index), cur.st, cur.changes)
		return Result{}
	}
	c, err := decode(l.Data, f.items)
	if err != nil {
		f.publish(l.Index, cur.st, cur.changes)
		return Result{Err: err}
	}
	if c.Shard != nil && cap(c.Shard.Items) > cap(f.items) {
		f.items = c.Shard.Items[:0]
	}
	var changed []uint32
	next, res, err := apply(cur.st, l.Index, c, &changed)
	if err != nil {
		f.publish(l.Index, cur.st, cur.changes)
		res.Err = err
		return res
	}
	created := len(next.Shards) != len(cur.st.Shards)
	f.publish(l.Index, next, cur.changes.record(l.Index, changed, created))
	return res
}

// apply computes the state after c. It returns a new state value and leaves
// st untouched (views share st's substructures), and appends to changed the
// shards whose entry it changed.
func apply(st state, index uint64, c Command, changed *[]uint32) (state, Result, error) {
	switch c.Op {
	case OpNoop:
		return st, Result{}, nil
	case OpInitCluster:
		next, err := applyInit(st, index, c.Init)
		return next, Result{}, err
	case OpSessionCreate:
		return applySessionCreate(st, index, c.Session, changed)
	case OpSessionClose:
		return applySessionEnd(st, index, c.Session, false, changed)
	case OpSessionExpire:
		return applySessionEnd(st, index, c.Session, true, changed)
	case OpAcquire:
		return applyAcquire(st, index, c.Lease)
	case OpRelease:
		return applyRelease(st, index, c.Lease)
	case OpShardGrant:
		return applyShardGrant(st, index, c.Shard, changed)
	case OpShardRevoke:
		return applyShardRevoke(st, index, c.Shard, changed)
	case OpShardRelease:
		return applyShardRelease(st, index, c.Shard, changed)
	case OpSessionDrain:
		return applySessionDrain(st, c.Session)
	case OpSemAcquire:
		return applySemAcquire(st, index, c.Sem)
	case OpSemRelease:
		return applySemRelease(st, index, c.Sem)
	case OpLeaseValue:
		return applyLeaseValue(st, c.Lease)
	case OpShardPin:
		return applyShardPin(st, index, c.Pin)
	case OpShardRule:
		return applyShardRule(st, index, c.Rule)
	case OpLeaseHandover:
		return applyHandover(st, index, c.Lease)
	default:
		return st, Result{}, fmt.Errorf("%w: %d", ErrUnknownOp, c.Op)
	}
}

func applyInit(st state, index uint64, in *InitCluster) (state, error) {
	if in.ClusterID == "" || in.Shards == 0 || in.Shards > MaxShards {
		return st, fmt.Errorf("%w: init-cluster needs an ID and 1 to %d shards", ErrMalformed, MaxShards)
	}
	if in.Created < 0 || in.Created > MaxTokenBase || in.TokenFloor > MaxTokenBase {
		return st, fmt.Errorf("%w: init-cluster token base (created %d, floor %d) outside [0, 2^62]", ErrMalformed, in.Created, in.TokenFloor)
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
		Created:      in.Created,
		TokenFloor:   in.TokenFloor,
	}
	// Tokens start above the base: every token of this incarnation is
	// larger than every token an earlier one issued (see Cluster.TokenBase).
	st.LastToken = max(st.LastToken, st.Cluster.TokenBase())
	st.Shards = newShardTable(in.Shards)
	st.ShardsIndex = index
	return st, nil
}

// snapshotData is the state at one index, as a snapshot holds it.
type snapshotData struct {
	Index uint64
	State state
}

// wireSnapshot is the encoded form of a snapshot: maps become slices sorted
// by key, because msgpack does not order map keys and snapshots of equal
// states must be byte-identical.
type wireSnapshot struct {
	Index     uint64    `msgpack:"index"`
	Cluster   Cluster   `msgpack:"cluster"`
	LastToken uint64    `msgpack:"last_token"`
	Sessions  []Session `msgpack:"sessions"`
	Leases    []Lease   `msgpack:"leases"`
	// Shards is the whole table in shard order (empty before InitCluster).
	Shards      []Shard `msgpack:"shards"`
	ShardsIndex uint64  `msgpack:"shards_index"`
	// Semaphores are sorted by name; snapshots written before semaphores
	// existed lack the field, and an empty list is omitted.
	Semaphores []Semaphore `msgpack:"semaphores,omitempty"`
	// Pins are sorted by shard; only under SnapshotPinVersion or later.
	Pins []Pin `msgpack:"pins,omitempty"`
	// Rules are sorted by name; only under SnapshotRuleVersion.
	Rules []Rule `msgpack:"rules,omitempty"`
}

// fromWire rebuilds the state, rejecting duplicates and leases whose holder
// is not a session (a snapshot that Snapshot could not have written).
func fromWire(w wireSnapshot) (snapshotData, error) {
	if w.Cluster.Created < 0 || w.Cluster.Created > MaxTokenBase || w.Cluster.TokenFloor > MaxTokenBase ||
		w.LastToken < w.Cluster.TokenBase() {
		return snapshotData{}, fmt.Errorf("%w: last token %d below the token base of cluster %+v", ErrMalformed, w.LastToken, w.Cluster)
	}
	st := state{Cluster: w.Cluster, LastToken: w.LastToken,
		Sessions: make(map[string]*Session, len(w.Sessions)),
		Leases:   make(map[string]*Lease, len(w.Leases)),
	}
	for i := range w.Sessions {
		s := &w.Sessions[i]
		if _, dup := st.Sessions[s.ID]; dup {
			return snapshotData{}, fmt.Errorf("%w: session %q twice in snapshot", ErrMalformed, s.ID)
		}
		st.Sessions[s.ID] = s
	}
	for i := range w.Leases {
		l := &w.Leases[i]
		if _, dup := st.Leases[l.Name]; dup {
			return snapshotData{}, fmt.Errorf("%w: lease %q twice in snapshot", ErrMalformed, l.Name)
		}
		if _, ok := st.Sessions[l.Holder]; !ok || l.Token > w.LastToken || checkLeaseValues(l) != nil {
			return snapshotData{}, fmt.Errorf("%w: lease %q is inconsistent", ErrMalformed, l.Name)
		}
		st.Leases[l.Name] = l
	}
	for _, s := range st.Sessions {
		if !validWeight(s.Weight) || checkTags("session", s.Tags, false) != nil {
			return snapshotData{}, fmt.Errorf("%w: session %q has weight %v", ErrMalformed, s.ID, s.Weight)
		}
		if !marksSorted(s.Marks) || !marksSorted(s.SemMarks) {
			return snapshotData{}, fmt.Errorf("%w: session %q has unsorted request marks", ErrMalformed, s.ID)
		}
	}
	if err := shardsFromWire(&st, w.Shards); err != nil {
		return snapshotData{}, err
	}
	st.ShardsIndex = w.ShardsIndex
	if err := semsFromWire(&st, w.Semaphores); err != nil {
		return snapshotData{}, err
	}
	if err := pinsFromWire(&st, w.Pins); err != nil {
		return snapshotData{}, err
	}
	if err := rulesFromWire(&st, w.Rules); err != nil {
		return snapshotData{}, err
	}
	return snapshotData{Index: w.Index, State: st}, nil
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
	f.publish(d.Index, d.State, newChangeLog(d.Index))
	return nil
}

// EncodeSnapshot returns the encoding of the FSM's current state, as
// Snapshot would persist it.
func (f *FSM) EncodeSnapshot() ([]byte, error) {
	v := f.view.Load()
	return encodeSnapshot(snapshotData{Index: v.index, State: v.st})
}

// decodeSnapshot parses a snapshot's bytes. It never panics.
func decodeSnapshot(b []byte) (snapshotData, error) {
	if len(b) > MaxSnapshotSize {
		return snapshotData{}, fmt.Errorf("%w: snapshot of %d bytes", ErrTooLarge, len(b))
	}
	if len(b) < 1 {
		return snapshotData{}, fmt.Errorf("%w: empty snapshot", ErrMalformed)
	}
	if b[0] != SnapshotVersion && b[0] != SnapshotValueVersion && b[0] != SnapshotPinVersion && b[0] != SnapshotRuleVersion {
		return snapshotData{}, fmt.Errorf("%w: snapshot version %d", ErrUnknownVersion, b[0])
	}
	var w wireSnapshot
	if err := decodeBody(b[1:], &w); err != nil {
		return snapshotData{}, err
	}
	if ruled := len(w.Rules) > 0 || sessionsTagged(w.Sessions); ruled != (b[0] == SnapshotRuleVersion) {
		return snapshotData{}, fmt.Errorf("%w: rules and tagged sessions in a version %d snapshot, and only there", ErrMalformed, SnapshotRuleVersion)
	}
	if b[0] == SnapshotRuleVersion {
		return fromWire(w)
	}
	if b[0] == SnapshotPinVersion {
		if len(w.Pins) == 0 {
			return snapshotData{}, fmt.Errorf("%w: a version %d snapshot without pins", ErrMalformed, SnapshotPinVersion)
		}
	} else if leasesCarryValues(w.Leases) != (b[0] == SnapshotValueVersion) || len(w.Pins) != 0 {
		return snapshotData{}, fmt.Errorf("%w: holder values only in a version %d snapshot, pins in version %d", ErrMalformed, SnapshotValueVersion, SnapshotPinVersion)
	}
	return fromWire(w)
}

type snapshot struct{ data snapshotData }

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := persist(sink, s.data); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *snapshot) Release() {}
