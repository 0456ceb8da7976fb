package fsm

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
}

// state is the replicated data proper: what a snapshot holds. It is never
// modified once published inside a View.
type state struct {
	Cluster Cluster `msgpack:"cluster"`
}

// View is an immutable snapshot of the replicated state at one applied
// index. It is safe to share between goroutines and is never modified.
type View struct {
	index   uint64
	st      state
	changed chan struct{}
}

// Index is the raft index of the last log entry applied to this view.
func (v *View) Index() uint64 { return v.index }

// Cluster returns the cluster metadata; its ID is empty before the cluster
// is initialised.
func (v *View) Cluster() Cluster { return v.st.Cluster }

// Changed returns a channel that is closed once a newer View has been
// published.
func (v *View) Changed() <-chan struct{} { return v.changed }
