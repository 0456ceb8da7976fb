package viewstream

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m, 5*time.Second) }

// bump applies a no-op entry, so the FSM publishes a new view.
func bump(f *fsm.FSM, index uint64) {
	f.Apply(&raft.Log{Index: index, Type: raft.LogNoop})
}

// TestStreamLatestAndDistinct: the first value is sent at once; a value
// whose key equals the last one sent is not sent again; a slow reader
// finds only the newest value; the channel closes when ctx ends.
func TestStreamLatestAndDistinct(t *testing.T) {
	f := fsm.New()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan uint64, 1)
	seen := make(chan uint64, 100) // every index next was called with
	done := make(chan struct{})
	go func() {
		defer close(done)
		Stream(ctx, nil, f.View, ch, func(v *fsm.View) (uint64, uint64, bool) {
			seen <- v.Index()
			return v.Index(), v.Index() / 2, true // keys: 0,0,1,1,2,...
		})
	}()
	if got := <-ch; got != 0 {
		t.Fatalf("first value %d, want 0", got)
	}
	<-seen
	bump(f, 1) // same key as 0: not sent
	if i := <-seen; i != 1 {
		t.Fatalf("next called at %d, want 1", i)
	}
	select {
	case v := <-ch:
		t.Fatalf("value %d sent with an unchanged key", v)
	default:
	}
	for i := uint64(2); i <= 5; i++ { // the reader does not read meanwhile
		bump(f, i)
		for <-seen != i {
		}
	}
	if got := <-ch; got != 4 {
		t.Fatalf("slow reader got %d, want the newest sent value 4 (5 has 4's key)", got)
	}
	cancel()
	<-done
	if _, ok := <-ch; ok {
		t.Fatal("channel still open after ctx ended")
	}
}

// TestStreamStops: closing stop ends the stream and closes the channel.
func TestStreamStops(t *testing.T) {
	f := fsm.New()
	stop := make(chan struct{})
	ch := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Stream(context.Background(), stop, f.View, ch, func(*fsm.View) (int, int, bool) { return 0, 0, false })
	}()
	close(stop)
	<-done
	if _, ok := <-ch; ok {
		t.Fatal("a value was sent although next reported none")
	}
}
