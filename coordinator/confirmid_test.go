package coordinator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/holdfasttest"
	"github.com/holdfast-go/holdfast/transport"
)

// confirmProbe is the body of a confirmation request (raft.confirm): the
// leader's term and the raft server ID of the voter it means.
type confirmProbe struct {
	Term uint64 `msgpack:"term"`
	ID   string `msgpack:"id"`
}

type confirmAnswer struct {
	OK bool `msgpack:"ok"`
}

// TestConfirmationAnsweredOnlyForOwnIdentity: the confirmation round asks
// a voter, by its raft server ID, whether it is still in the leader's
// term; whatever node answers at that voter's address must say no when it
// is not that voter (a wiped node back at the same address, another node
// that took the address over). A follower says yes for its own ID and the
// current term, and no for the same term asked of another ID.
func TestConfirmationAnsweredOnlyForOwnIdentity(t *testing.T) {
	t.Parallel()
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout)
	f := follower(cl, leader)
	probe, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	ask := func(term uint64, id string) (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var rep confirmAnswer
		err := probe.Call(ctx, f.C().RPCAddr(), "raft.confirm", confirmProbe{Term: term, ID: id}, &rep)
		return rep.OK, err
	}
	// Find the current term: the one the follower confirms for itself.
	var term uint64
	cl.WaitFor("the follower confirms the current term for its own ID", formTimeout, func() error {
		for tm := uint64(1); tm < 64; tm++ {
			ok, err := ask(tm, f.C().ID())
			if err != nil {
				return fmt.Errorf("%w: %v", holdfasttest.ErrNotYet, err)
			}
			if ok {
				term = tm
				return nil
			}
		}
		return holdfasttest.ErrNotYet
	})
	ok, err := ask(term, "another-identity")
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Fatalf("%s confirmed term %d for a voter with another raft ID", f.Name, term)
	}
	if ok, err := ask(term, f.C().ID()); err != nil || !ok {
		t.Fatalf("%s no longer confirms term %d for itself: %v %v", f.Name, term, ok, err)
	}
}
