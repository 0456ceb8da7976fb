package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// checkedRaft is the raft instance as autopilot drives it, with one
// change: a promotion (AddVoter; members join as non-voters, so every
// AddVoter autopilot makes promotes one) first asks the candidate for its
// stats, and is refused unless it answers now.
//
// Why: autopilot judges a candidate healthy from its last stats poll, up to
// ReconcileInterval old. A candidate that died since still looks healthy,
// and promoting it while a voter is down (the promoter keeps a down voter's
// vote until its replacement is in) makes a configuration of Voters+1
// voters with two of them down: the change itself cannot commit without
// the candidate's answer, the leader steps down, and no election can win
// again, since every voter's log ends with that configuration. One failed
// non-voter at the wrong moment would then take the cluster down, against
// the promise that it survives any failures that leave a majority of its
// voters up. The check leaves a window of one round trip (the candidate
// dying between its answer and its append of the change), where autopilot's
// own poll left one of up to ReconcileInterval.
type checkedRaft struct {
	Raft
	probe func(id raft.ServerID, addr raft.ServerAddress) error
}

// AddVoter promotes id if it answers the probe now.
func (r checkedRaft) AddVoter(id raft.ServerID, addr raft.ServerAddress, prevIndex uint64, timeout time.Duration) raft.IndexFuture {
	if err := r.probe(id, addr); err != nil {
		return failedFuture{fmt.Errorf("holdfast: not promoting %s: it does not answer now: %w", id, err)}
	}
	return r.Raft.AddVoter(id, addr, prevIndex, timeout)
}

// probeCandidate asks the server id at addr for its stats, within a
// heartbeat timeout (and RPCTimeout).
func (cl *Cluster) probeCandidate(id raft.ServerID, addr raft.ServerAddress) error {
	rpc, _, err := transport.SplitRaftAddress(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(cl.o.RPCTimeout, cl.o.HeartbeatTimeout))
	defer cancel()
	var rep wire.StatsReply
	if err := cl.o.Caller.Call(ctx, rpc, wire.MethodStats, wire.StatsRequest{Health: cl.leaderHealth()}, &rep); err != nil {
		return err
	}
	cl.o.Heard.NoteHeard(string(id), cl.o.Now())
	return nil
}

// failedFuture is a raft.IndexFuture that failed before reaching raft.
type failedFuture struct{ err error }

func (f failedFuture) Error() error  { return f.err }
func (f failedFuture) Index() uint64 { return 0 }
