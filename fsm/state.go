package fsm

import (
	"slices"
	"strings"
	"sync"
)

// Cluster is the identity and creation parameters of a formed cluster.
type Cluster struct {
	// ID is empty until an InitCluster command is applied.
	ID string `msgpack:"id"`
	// Shards is the fixed shard count.
	Shards uint32 `msgpack:"shards"`
	// Voters is the number of voters the cluster keeps.
	Voters uint8 `msgpack:"voters"`
	// CreatedBy names the node that proposed the cluster.
	CreatedBy string `msgpack:"by"`
	// CreatedIndex is the raft index of the InitCluster command.
	CreatedIndex uint64 `msgpack:"index"`
	// Created is the creating leader's wall clock at creation, in
	// microseconds since the Unix epoch; 0 for a cluster created by an
	// earlier release. It also names the incarnation: a cluster created
	// anew (every data dir lost) has a later one.
	Created int64 `msgpack:"created,omitempty"`
	// TokenFloor is the operator's token floor given at creation (0: none).
	TokenFloor uint64 `msgpack:"floor,omitempty"`
}

// TokenBase is the value the token counter started from: the larger of
// Created and TokenFloor (0 for a cluster created by an earlier release,
// whose tokens start at 1). Every token the cluster issues is above it, so
// last token − TokenBase is the number of grants since creation.
//
// The assumption behind Created: a cluster created at clock reading C1
// (µs) issues tokens above C1, and an earlier incarnation created at C0
// issued at most C0 + N, N its grants. The new cluster's tokens are above
// every earlier one as long as N < C1 − C0: fewer grants, on average, than
// one per microsecond (a thousand per millisecond) between the two
// creations, as the two creating leaders' clocks tell it. It fails when
// the earlier cluster issued more than that, or when the new creator's
// clock reads earlier than the old one's by more than the time between the
// creations minus N µs (a clock set back). TokenFloor, the resources'
// highest token, covers both cases for every token that reached a
// resource.
func (c Cluster) TokenBase() uint64 {
	return max(uint64(max(c.Created, 0)), c.TokenFloor)
}

// Session is one node incarnation's session. All of the node's leases hang
// off it: when it ends (closed or expired) they are released.
type Session struct {
	ID       string `msgpack:"id"`
	Node     string `msgpack:"node"`
	NodeID   string `msgpack:"nid"`
	TTLNanos int64  `msgpack:"ttl"`
	// Created is the raft index of the command that created the session.
	Created uint64 `msgpack:"created"`
	// Addr is the address applications reach the session's node at
	// (returned with shard owners).
	Addr string `msgpack:"addr,omitempty"`
	// Weight is the node's relative shard capacity (0 means 1).
	Weight float64 `msgpack:"weight,omitempty"`
	// Drained sessions are granted no shards; the leader moves theirs away.
	Drained bool `msgpack:"drained,omitempty"`
	// Gen is the session's generation among its node's sessions (0: a
	// session of an older release's create; see SessionCmd.Gen).
	Gen uint64 `msgpack:"gen,omitempty"`
	// Tags are the node's placement tags (SessionCmd.Tags), which rules
	// require of shard owners. Shared between views: never modify.
	Tags []string `msgpack:"tags,omitempty"`
	// Level is the command level of the release that created the session
	// (SessionCmd.Level; 0: a release before levels).
	Level uint32 `msgpack:"lvl,omitempty"`
	// Marks are the session's request marks, one per lease name it used,
	// sorted by name: the highest request ID of its commands for that name.
	// An acquire at or below its mark that neither holds nor waits is stale
	// and changes nothing. Shared between views: never modify in place.
	Marks []RequestMark `msgpack:"marks,omitempty"`
	// SemMarks are the session's request marks for semaphore names, kept
	// like Marks (a semaphore and a lease may share a name).
	SemMarks []RequestMark `msgpack:"sem_marks,omitempty"`
}

// RequestMark is a session's highest request ID for one lease name.
type RequestMark struct {
	Name    string `msgpack:"name"`
	Request uint64 `msgpack:"req"`
}

// mark returns the session's request mark for name (0: none).
func (s *Session) mark(name string) uint64 {
	i, ok := slices.BinarySearchFunc(s.Marks, name, func(m RequestMark, n string) int { return strings.Compare(m.Name, n) })
	if !ok {
		return 0
	}
	return s.Marks[i].Request
}

// Waiter is a session queued for a lease, with the request that queued it.
type Waiter struct {
	Session string `msgpack:"session"`
	Request uint64 `msgpack:"req"`
	// Value is the holder value the waiter's acquire carries; its grant
	// takes it.
	Value string `msgpack:"value,omitempty"`
}

// Lease is a named leader lease. A lease with no holder does not exist in
// the state: releasing it either grants it to the first waiter or deletes it.
type Lease struct {
	Name string `msgpack:"name"`
	// Holder is the holding session's ID; HolderNode and HolderNodeID name
	// its node (copied from the session at grant, for one-lookup reads).
	Holder       string `msgpack:"holder"`
	HolderNode   string `msgpack:"holder_node"`
	HolderNodeID string `msgpack:"holder_nid"`
	// Token is the fencing token of the current grant.
	Token uint64 `msgpack:"token"`
	// Request is the holder's request that the grant answered.
	Request uint64 `msgpack:"req"`
	// Granted is the raft index of the grant.
	Granted uint64 `msgpack:"granted"`
	// Waiters are the sessions queued for the lease, first come first.
	Waiters []Waiter `msgpack:"waiters"`
	// Value is the holder value of the current grant (see OpLeaseValue),
	// ValueSeq the sequence of its last update (0: the acquire's value).
	Value    string `msgpack:"value,omitempty"`
	ValueSeq uint64 `msgpack:"vseq,omitempty"`
}

// state is the replicated data proper: what a snapshot holds. It is never
// modified once published inside a View; apply builds a new one, sharing
// whatever did not change.
type state struct {
	Cluster Cluster
	// LastToken is the last fencing token issued; every grant takes the
	// next one, so tokens increase across every lease and shard.
	LastToken uint64
	Sessions  map[string]*Session
	Leases    map[string]*Lease
	// Semaphores holds every semaphore with a holder or a waiter.
	Semaphores map[string]*Semaphore
	// Shards is the shard table in copy-on-write pages (nil before
	// InitCluster); ShardsIndex is the index of its last change.
	Shards      shardTable
	ShardsIndex uint64
	// Pins are the operators' shard pins (OpShardPin), by shard.
	Pins map[uint32]Pin
	// Rules are the operators' placement rules (OpShardRule), by name.
	Rules []Rule
	// owned indexes the table by owner (see ownedIndex); it is derived
	// from Shards, not snapshotted.
	owned ownedIndex
}

// View is an immutable snapshot of the replicated state at one applied
// index. It is safe to share between goroutines and is never modified.
type View struct {
	index   uint64
	st      state
	changes changeLog
	changed chan struct{}
	// minLevel is the lowest command level of the view's sessions,
	// computed once (SessionsAtLevel).
	levelOnce sync.Once
	minLevel  uint32
}

// Index is the raft index of the last log entry applied to this view.
func (v *View) Index() uint64 { return v.index }

// Cluster returns the cluster metadata; its ID is empty before the cluster
// is initialised.
func (v *View) Cluster() Cluster { return v.st.Cluster }

// Changed returns a channel that is closed once a newer View has been
// published.
func (v *View) Changed() <-chan struct{} { return v.changed }

// Session returns the session with the given ID.
func (v *View) Session(id string) (Session, bool) {
	s, ok := v.st.Sessions[id]
	if !ok {
		return Session{}, false
	}
	return *s, true
}

// Sessions returns every session, sorted by ID.
func (v *View) Sessions() []Session {
	out := make([]Session, 0, len(v.st.Sessions))
	for _, id := range sortedKeys(v.st.Sessions) {
		out = append(out, *v.st.Sessions[id])
	}
	return out
}

// SessionAddr returns the address applications reach the session's node
// at (Session.Addr) without copying the session; ok is false when there is
// no such session.
func (v *View) SessionAddr(id string) (addr string, ok bool) {
	s, ok := v.st.Sessions[id]
	if !ok {
		return "", false
	}
	return s.Addr, true
}

// Holder returns the session holding the named lease and its token,
// without allocating; ok is false when nobody holds it.
func (v *View) Holder(name string) (session string, token uint64, ok bool) {
	l, ok := v.st.Leases[name]
	if !ok {
		return "", 0, false
	}
	return l.Holder, l.Token, true
}

// HolderNode returns the named lease's holder session, its node name and
// ID, and its token, with one map lookup and no allocation; ok is false when
// nobody holds it.
func (v *View) HolderNode(name string) (session, node, nodeID string, token uint64, ok bool) {
	l, ok := v.st.Leases[name]
	if !ok {
		return "", "", "", 0, false
	}
	return l.Holder, l.HolderNode, l.HolderNodeID, l.Token, true
}

// HolderValue returns the holder value of the named lease's current grant
// ("" when it has none, or nobody holds the lease), without allocating.
func (v *View) HolderValue(name string) string {
	if l, ok := v.st.Leases[name]; ok {
		return l.Value
	}
	return ""
}

// Grant returns the named lease's holder, token and the holder's request
// that the grant answered, without allocating; ok is false when nobody
// holds it.
func (v *View) Grant(name string) (session string, token, request uint64, ok bool) {
	l, ok := v.st.Leases[name]
	if !ok {
		return "", 0, 0, false
	}
	return l.Holder, l.Token, l.Request, true
}

// Lease returns a copy of the named lease; ok is false when nobody holds it.
func (v *View) Lease(name string) (Lease, bool) {
	l, ok := v.st.Leases[name]
	if !ok {
		return Lease{}, false
	}
	c := *l
	c.Waiters = append([]Waiter(nil), l.Waiters...)
	return c, true
}

// Leases returns every held lease, sorted by name.
func (v *View) Leases() []Lease {
	out := make([]Lease, 0, len(v.st.Leases))
	for _, name := range sortedKeys(v.st.Leases) {
		l, _ := v.Lease(name)
		out = append(out, l)
	}
	return out
}

// LastToken returns the last fencing token issued.
func (v *View) LastToken() uint64 { return v.st.LastToken }
