package raftnode

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
)

// TestReadIndexSkipsNonCommandEntries: the replica index that covers a
// commit index is that of the last command at or below it (fsm indexes
// count commands only); a compacted entry is covered by the replica's own
// index.
func TestReadIndexSkipsNonCommandEntries(t *testing.T) {
	logs := raft.NewInmemStore()
	if err := logs.StoreLogs([]*raft.Log{
		{Index: 5, Type: raft.LogCommand}, {Index: 6, Type: raft.LogCommand},
		{Index: 7, Type: raft.LogConfiguration}, {Index: 8, Type: raft.LogBarrier},
	}); err != nil {
		t.Fatal(err)
	}
	r := Reads{Node: &Node{stores: &stores{logs: logs}}, Replica: fsm.New()}
	for _, tc := range []struct{ commit, want uint64 }{
		{8, 6}, {7, 6}, {6, 6}, {5, 5},
		{4, 0}, // compacted: the replica (index 0 here) covers it
	} {
		got, err := r.lastCommandAtOrBefore(context.Background(), tc.commit)
		if err != nil || got != tc.want {
			t.Errorf("commit %d: read index %d, %v; want %d", tc.commit, got, err, tc.want)
		}
	}
}

// TestLeaderWatchSince: a node knows since when it has had no leader, and
// forgets it once a leader is known.
func TestLeaderWatchSince(t *testing.T) {
	var w LeaderWatch
	if _, none := w.Since(true); none {
		t.Fatal("leaderless while a leader is known")
	}
	before := time.Now()
	w.Start()
	since, none := w.Since(false)
	if !none || since.Before(before) {
		t.Fatalf("after Start: %v, %v; want leaderless since at least %v", since, none, before)
	}
	if again, _ := w.Since(false); !again.Equal(since) {
		t.Fatalf("leaderless since %v, then %v: the start moved", since, again)
	}
	w.Since(true)
	mark := time.Now()
	if later, none := w.Since(false); !none || later.Before(mark) {
		t.Fatalf("leaderless again: since %v, %v; want a start at or after %v", later, none, mark)
	}
}

// TestFollowLeadershipRunsDutiesPerTerm: duties start on a win, end (and
// are joined) on a loss, a new win starts them afresh, and the end of ctx
// joins the last term's.
func TestFollowLeadershipRunsDutiesPerTerm(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan bool)
	started, ended := make(chan int, 4), make(chan int, 4)
	changes := 0
	term := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		FollowLeadership(ctx, ch, slog.New(slog.DiscardHandler), func() { changes++ }, func(dctx context.Context) {
			term++
			n := term
			started <- n
			<-dctx.Done()
			ended <- n
		})
	}()
	ch <- true
	if n := <-started; n != 1 {
		t.Fatalf("first win started term %d", n)
	}
	ch <- false
	if n := <-ended; n != 1 {
		t.Fatalf("loss ended term %d", n)
	}
	ch <- true
	if n := <-started; n != 2 {
		t.Fatalf("second win started term %d", n)
	}
	cancel()
	<-done
	select {
	case n := <-ended:
		if n != 2 {
			t.Fatalf("shutdown ended term %d", n)
		}
	default:
		t.Fatal("FollowLeadership returned before the last term's duties did")
	}
	if changes != 3 {
		t.Fatalf("%d leadership changes seen, want 3", changes)
	}
}

// applyFuture is a raft.ApplyFuture answered when its channel delivers.
type applyFuture struct{ chanFuture }

func (applyFuture) Index() uint64         { return 1 }
func (applyFuture) Response() interface{} { return nil }

// TestReadIndexWaitsForSubmitted: a read index waits until the commands
// this node submitted (Submit returns before their commit) are answered,
// so a Sync that starts after a Submit returned reads after it.
func TestReadIndexWaitsForSubmitted(t *testing.T) {
	var fs Futures
	f := applyFuture{make(chanFuture, 1)}
	p, err := StartFuture(&fs, func() raft.ApplyFuture { return f })
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{stores: &stores{logs: raft.NewInmemStore()}}
	n.lastSubmit.Store(&pendingApply{p})
	confirmed := false
	r := Reads{Node: n, Replica: fsm.New(), Confirm: func(context.Context, func() uint64) (uint64, error) {
		confirmed = true
		return 0, nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.ReadIndex(ctx); !errors.Is(err, context.DeadlineExceeded) || confirmed {
		t.Fatalf("read index with a submitted command unanswered: %v (confirmed %v); want it to wait", err, confirmed)
	}
	f.chanFuture <- nil
	if _, err := r.ReadIndex(context.Background()); err != nil || !confirmed {
		t.Fatalf("read index once the command was answered: %v (confirmed %v)", err, confirmed)
	}
}
