package coordinator_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/internal/storetest"
	"github.com/holdfast-go/holdfast/internal/walog"
)

// TestLeaderSyncsBesideItsFollowers: the raft leader's append of a command
// returns before its sync, so the followers store the entry while the
// leader's disk writes it, and raft commits it on the followers' copies.
// Nothing may act on that commit until the leader's copy is on disk: with
// the leader's sync held (its log on a file system whose segment sync
// blocks), the leader's commit index passes the entry, yet no node
// applies it (shows the grant) and the Acquire it answers does not return;
// once the sync is let go, the Acquire returns and every node applies the
// entry. The nodes are watched for the grant over fifty commit timeouts,
// so a follower told of the commit (an AppendEntries whose commit index
// was not lowered to the leader's disk) would show it. An attempt leaves
// nothing to check, and is let go and made again, when the leader loses
// office meanwhile (on a machine starved of CPU), even if it wins it back,
// or when another raft request reaches the leader while its sync is held:
// the log keeps at most one batch unsynced, so the next append waits
// behind the held sync, and raft's loop, stuck in that append, stops
// advancing the commit index. So each attempt starts on a quiet cluster
// (its one shard owned, the leader's duties running: its opening entries
// are written) and counts the raft requests in flight on the leader.
func TestLeaderSyncsBesideItsFollowers(t *testing.T) {
	t.Parallel()
	regs := make([]*prometheus.Registry, 3)
	disks := make([]*storetest.FaultFS, 3)
	for i := range regs {
		regs[i], disks[i] = prometheus.NewRegistry(), storetest.NewFaultFS(walog.OSFS())
	}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = 1
		c.Registerer = regs[i]
		coordinator.SetLogFS(c, disks[i])
	}})
	for _, n := range cl.Nodes() {
		waitReady(t, n)
	}
	waitBalanced(t, cl, 1, formTimeout)
	const attempts = 5
	for i := 1; ; i++ {
		why := syncBeside(t, cl, regs, disks)
		if why == "" {
			return
		}
		if i == attempts {
			t.Fatalf("no attempt of %d left anything to check; the last: %s", attempts, why)
		}
		t.Logf("attempt %d: %s; trying again", i, why)
	}
}

// followerWatch is how long TestLeaderSyncsBesideItsFollowers watches the
// nodes for the grant once the leader committed it: fifty of the
// CommitTimeouts after which an idle leader tells the followers its commit
// index.
var followerWatch = 50 * coordinator.DefaultLocalConfig().Raft.CommitTimeout

// grantShown watches every node of cl (WatchHolder) for a grant of name
// until watch has passed, and describes each node that showed one.
func grantShown(cl *holdfasttest.Cluster, name string, watch time.Duration) []string {
	ctx, cancel := context.WithTimeout(context.Background(), watch)
	defer cancel()
	var (
		mu    sync.Mutex
		wrong []string
		wg    sync.WaitGroup
	)
	for _, n := range cl.Nodes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := false
			for h := range n.C().WatchHolder(ctx, name) { // closed when the watch ends
				if h.Session != "" && !seen {
					seen = true
					mu.Lock()
					wrong = append(wrong, fmt.Sprintf("%s applied the grant (applied index %d) with the leader's copy of it not on disk", n.Name, n.C().AppliedIndex()))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return wrong
}

// besideAttempt is one attempt of syncBeside: the leader it began under,
// in which term, and a follower whose Acquire makes the entry.
type besideAttempt struct {
	t                *testing.T
	regs             []*prometheus.Registry
	leader, follower *holdfasttest.Node
	term             float64
}

// startBeside waits for a leader whose duties run (its opening entries,
// raft's no-op and the barrier, applied: the lessor's deadlines show it)
// on a settled cluster, and returns the attempt begun under it.
func startBeside(t *testing.T, cl *holdfasttest.Cluster, regs []*prometheus.Registry) *besideAttempt {
	t.Helper()
	a := &besideAttempt{t: t, regs: regs, leader: cl.WaitLeader(formTimeout)}
	for _, n := range cl.Nodes() {
		if n != a.leader {
			a.follower = n
		}
	}
	a.term = a.termNow()
	cl.WaitFor("the leader's duties running", formTimeout, func() error {
		if _, ok := a.leader.C().LessorDeadline(a.follower.C().SessionID()); !ok && a.leads() {
			return fmt.Errorf("%w: %s's lessor not active", holdfasttest.ErrNotYet, a.leader.Name)
		}
		return nil
	})
	waitSettled(t, cl, a.leader, regs)
	return a
}

// termNow returns the raft term the leader reports now.
func (a *besideAttempt) termNow() float64 {
	return metricValue(a.t, a.regs[a.leader.Index], "holdfast_raft_term", nil)
}

// leads reports whether the leader still leads in the term it led in when
// the attempt began: one that lost office and won it back may have let
// another leader commit the entry meanwhile.
func (a *besideAttempt) leads() bool {
	return a.leader.C().RaftState() == coordinator.StateLeader && a.termNow() == a.term
}

// commit returns the leader's raft commit index.
func (a *besideAttempt) commit() uint64 { return raftCommitIndex(a.t, a.regs[a.leader.Index]) }

// syncBeside is one attempt of TestLeaderSyncsBesideItsFollowers; it
// returns "" once the checks were made, else why the attempt left nothing
// to check.
func syncBeside(t *testing.T, cl *holdfasttest.Cluster, regs []*prometheus.Registry, disks []*storetest.FaultFS) string {
	t.Helper()
	a := startBeside(t, cl, regs)
	if !a.leads() {
		return lostOffice
	}
	leader, follower, leads, commit := a.leader, a.follower, a.leads, a.commit
	base := commit()

	hold := holdSegmentSyncs(disks[leader.Index])
	defer hold.let()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	done := acquireReleaseAsync(ctx, follower.C(), "beside")
	finished := false
	settle := func() { // the attempt is given up: its Acquire goes on without the hold
		hold.let()
		if !finished {
			<-done
		}
	}
	select {
	case <-hold.held:
	case err := <-done:
		if !leads() {
			return lostOffice
		}
		t.Fatalf("the Acquire returned (%v) before the leader synced its entry", err)
	case <-ctx.Done():
		t.Fatal("the leader never synced the Acquire's entry")
	}
	// The Acquire's command is the one raft request the leader may have in
	// flight: another one waits behind the held sync, and so does the
	// commit index.
	var others int
	cl.WaitFor("the entry committed on the followers' copies", formTimeout, func() error {
		if others = leader.C().RaftFuturesInFlight() - 1; others > 0 || !leads() {
			return nil
		}
		if c := commit(); c <= base {
			return fmt.Errorf("%w: commit index %d", holdfasttest.ErrNotYet, c)
		}
		return nil
	})
	if others > 0 && commit() <= base {
		settle()
		return fmt.Sprintf("%d other raft request(s) reached the leader while its sync was held", others)
	}
	// The grant is what must not show: another entry may have been synced
	// before the hold and committed since, so indexes past base prove
	// nothing by themselves. The followers hear of a commit in the next
	// AppendEntries (one every CommitTimeout while the leader idles), so
	// the grant is looked for over many of those: a commit index sent past
	// the leader's disk would show it there.
	wrong := grantShown(cl, "beside", followerWatch)
	select {
	case err := <-done:
		finished = true
		wrong = append(wrong, fmt.Sprintf("the Acquire returned (%v) with the leader's copy of its entry not on disk", err))
	default:
	}
	if !leads() {
		settle()
		return lostOffice
	}
	for _, w := range wrong {
		t.Error(w)
	}
	if len(wrong) > 0 {
		t.FailNow()
	}
	hold.let()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitAllApplied(cl, base)
	return ""
}

// lostOffice is why an attempt of syncBeside left nothing to check when
// its leader lost office, or won it back in another term.
const lostOffice = "the leader lost office while its sync was held"

// waitAllApplied waits until every node applied an entry past index base.
func waitAllApplied(cl *holdfasttest.Cluster, base uint64) {
	cl.WaitFor("every node applied the entry", formTimeout, func() error {
		for _, n := range cl.Nodes() {
			if a := n.C().AppliedIndex(); a <= base {
				return fmt.Errorf("%w: %s applied %d", holdfasttest.ErrNotYet, n.Name, a)
			}
		}
		return nil
	})
}

// acquireReleaseAsync acquires and releases name on c in the background;
// the first error, or nil, comes on the channel.
func acquireReleaseAsync(ctx context.Context, c *coordinator.Coordinator, name string) <-chan error {
	done := make(chan error, 1)
	go func() {
		l, err := c.Acquire(ctx, name)
		if err == nil {
			err = l.Release(ctx)
		}
		done <- err
	}()
	return done
}

// raftCommitIndex reads a node's commit index from its registry.
func raftCommitIndex(t *testing.T, reg *prometheus.Registry) uint64 {
	return uint64(metricValue(t, reg, "holdfast_raft_commit_index", nil))
}

// waitSettled waits until every node is at the leader's commit index with
// the leader's applied state.
func waitSettled(t *testing.T, cl *holdfasttest.Cluster, leader *holdfasttest.Node, regs []*prometheus.Registry) {
	t.Helper()
	cl.WaitFor("every node at the leader's commit index, with the same state", formTimeout, func() error {
		c, a := raftCommitIndex(t, regs[leader.Index]), leader.C().AppliedIndex()
		for _, n := range cl.Nodes() {
			if nc, na := raftCommitIndex(t, regs[n.Index]), n.C().AppliedIndex(); nc != c || na != a {
				return fmt.Errorf("%w: %s at commit %d, state %d; the leader at %d, %d", holdfasttest.ErrNotYet, n.Name, nc, na, c, a)
			}
		}
		return nil
	})
}

// segmentSyncHold holds every sync of a raft log segment on one disk
// until let is called; held receives (at most one value, never blocking
// the disk) when a sync is held.
type segmentSyncHold struct {
	disk     *storetest.FaultFS
	on       atomic.Bool
	held     chan struct{}
	release  chan struct{}
	released bool
}

// holdSegmentSyncs starts holding disk's segment syncs.
func holdSegmentSyncs(disk *storetest.FaultFS) *segmentSyncHold {
	h := &segmentSyncHold{disk: disk, held: make(chan struct{}, 1), release: make(chan struct{})}
	disk.SetRule(func(c storetest.Call) error {
		if c.Op == storetest.OpSync && strings.HasSuffix(c.Path, ".seg") && h.on.Load() {
			select {
			case h.held <- struct{}{}:
			default:
			}
			<-h.release
		}
		return nil
	})
	h.on.Store(true)
	return h
}

// let releases the held syncs and holds no more; the disk's rule is
// removed. It may be called more than once, from the test's goroutine.
func (h *segmentSyncHold) let() {
	h.on.Store(false)
	if !h.released {
		h.released = true
		close(h.release)
		h.disk.SetRule(nil)
	}
}
