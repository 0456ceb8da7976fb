package coordinator_test

import (
	"context"
	"testing"

	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestElectionNeverReportsReleasedHolder: a follower acquires and releases
// a lease, then runs an election over it: OnNewLeader's first report is
// the follower's own new term, never the grant it had just released (its
// replica may still show that grant when the election starts; RunElection
// reads the holders only once its replica reflects what was committed
// before it began). Repeated, since the lag it guards against is a race.
func TestElectionNeverReportsReleasedHolder(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(formTimeout)
	f := cl.Node((leader.Index + 1) % 3).C()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	for round := range 5 {
		l, err := f.Acquire(ctx, "released-first")
		if err != nil {
			t.Fatal(err)
		}
		released := l.Token()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := startRunner(f, 0, "released-first")
		var term uint64
		select {
		case term = <-r.started:
		case <-ctx.Done():
			t.Fatal("no term started")
		}
		if err := r.stop(t); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		holders := append([]uint64(nil), r.holders...)
		r.mu.Unlock()
		for _, tok := range holders {
			if tok <= released {
				t.Fatalf("round %d: OnNewLeader reported token %d, the grant released before the election (%d); reports %v, term %d",
					round, tok, released, holders, term)
			}
		}
	}
}
