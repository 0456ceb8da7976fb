package shards

import (
	"context"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// prepRig is a manager rig whose node (session "me") prepares shards: each
// Prepare call is reported on calls and returns when ready gets a value.
type prepRig struct {
	*mgrRig
	calls chan context.Context
	ready chan struct{}
}

func newPrepRig(t *testing.T) *prepRig {
	rig := &prepRig{mgrRig: newMgrRig(t, 4), calls: make(chan context.Context, 10), ready: make(chan struct{}, 10)}
	rig.m.o.Prepare = func(ctx context.Context, _ ShardID, from string, token uint64) error {
		rig.calls <- ctx
		select {
		case <-rig.ready:
		case <-ctx.Done():
		}
		return nil
	}
	rig.m.o.PrepareHold = time.Hour
	rig.replica.session("old", ttl, false)
	rig.grant("old", 0, 1)
	rig.open("me", time.Hour)
	rig.sync()
	return rig
}

func (rig *prepRig) items(ids ...uint32) []fsm.ShardItem {
	var out []fsm.ShardItem
	for _, id := range ids {
		sh, _ := rig.view().Shard(id)
		out = append(out, fsm.ShardItem{Shard: id, Session: sh.Owner, Token: sh.Token})
	}
	return out
}

func (rig *prepRig) nextCall() context.Context {
	rig.t.Helper()
	select {
	case ctx := <-rig.calls:
		return ctx
	case <-time.After(10 * time.Second):
		rig.t.Fatal("no Prepare call in 10s")
		return nil
	}
}

func endedWith(t *testing.T, ctx context.Context) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(10 * time.Second):
		t.Fatal("the prepare's context did not end in 10s")
		return nil
	}
}

// TestManagerPrepareThenGrant: Prepare answers once the callback returned;
// the context stays alive through the revoke and the release, and ends
// with context.Canceled after the grant's Acquire was called.
func TestManagerPrepareThenGrant(t *testing.T) {
	rig := newPrepRig(t)
	done := make(chan int, 1)
	go func() {
		n, err := rig.m.Prepare(context.Background(), "me", rig.items(0), time.Hour)
		if err != nil {
			t.Errorf("Prepare: %v", err)
		}
		done <- n
	}()
	ctx := rig.nextCall()
	rig.ready <- struct{}{}
	if n := <-done; n != 1 {
		t.Fatalf("%d ready, want 1", n)
	}
	rig.revoke(0)
	rig.sync()
	rig.replica.release(0)
	rig.sync()
	if ctx.Err() != nil {
		t.Fatalf("the prepare ended (%v) before the grant", context.Cause(ctx))
	}
	rig.grant("me", 0)
	rig.sync()
	rig.next(rig.acquired, "acquire")
	if cause := endedWith(t, ctx); cause != context.Canceled {
		t.Fatalf("cause %v, want context.Canceled", cause)
	}
}

// TestManagerPrepareWaitBounded: a callback that does not return in time
// leaves Prepare answering 0 ready once the wait passed; the callback goes
// on until the move ends.
func TestManagerPrepareWaitBounded(t *testing.T) {
	rig := newPrepRig(t)
	n, err := rig.m.Prepare(context.Background(), "me", rig.items(0), time.Millisecond)
	if err != nil || n != 0 {
		t.Fatalf("Prepare = %d, %v; want 0 ready", n, err)
	}
	ctx := rig.nextCall()
	if ctx.Err() != nil {
		t.Fatal("the prepare ended when the leader stopped waiting")
	}
}

// TestManagerPrepareAbandoned: the prepare ends with Errors.Abandoned when
// the leader abandons it, when another session gets the shard, when the
// revoke names another target, and when the hold passes; a second request
// for the same move does not call Prepare again.
func TestManagerPrepareAbandoned(t *testing.T) {
	rig := newPrepRig(t)
	rig.replica.session("third", ttl, false)
	ask := func(ids ...uint32) {
		if _, err := rig.m.Prepare(context.Background(), "me", rig.items(ids...), time.Millisecond); err != nil {
			t.Fatalf("Prepare: %v", err)
		}
	}
	ask(0)
	c0 := rig.nextCall()
	ask(0) // the same move again: no second call
	rig.m.Abandon("me", rig.items(0))
	if cause := endedWith(t, c0); cause != ErrAbandoned {
		t.Fatalf("abandoned: cause %v", cause)
	}
	rig.none2()

	ask(1)
	c1 := rig.nextCall()
	rig.revoke(1)
	rig.replica.release(1)
	rig.grant("third", 1)
	rig.sync()
	if cause := endedWith(t, c1); cause != ErrAbandoned {
		t.Fatalf("granted elsewhere: cause %v", cause)
	}

	rig.grant("old", 2)
	ask(2)
	c2 := rig.nextCall()
	sh, _ := rig.view().Shard(2)
	rig.mustApply(fsm.Command{Op: fsm.OpShardRevoke, Shard: &fsm.ShardCmd{Items: []fsm.ShardItem{{Shard: 2, Session: "old", Token: sh.Token, To: "third"}}}})
	rig.sync()
	if cause := endedWith(t, c2); cause != ErrAbandoned {
		t.Fatalf("revoked toward another: cause %v", cause)
	}

	rig.grant("old", 3)
	rig.m.mu.Lock()
	rig.m.o.PrepareHold = time.Nanosecond
	rig.m.mu.Unlock()
	ask(3)
	c3 := rig.nextCall()
	testkit.Eventually(t, "the hold passed", 10*time.Second, testkit.Holds(func() bool { rig.sync(); return c3.Err() != nil }))
	if cause := context.Cause(c3); cause != ErrAbandoned {
		t.Fatalf("hold passed: cause %v", cause)
	}
}

// none2 checks that no Prepare call is waiting.
func (rig *prepRig) none2() {
	rig.t.Helper()
	select {
	case <-rig.calls:
		rig.t.Fatal("Prepare called twice for one move")
	default:
	}
}

// TestManagerPrepareWrongTarget: a request for another session than this
// node's is refused, and Close ends the prepares under way.
func TestManagerPrepareWrongTarget(t *testing.T) {
	rig := newPrepRig(t)
	if _, err := rig.m.Prepare(context.Background(), "other", rig.items(0), time.Millisecond); err != ErrNotTarget {
		t.Fatalf("Prepare for another session: %v, want ErrNotTarget", err)
	}
	if _, err := rig.m.Prepare(context.Background(), "me", rig.items(0), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx := rig.nextCall()
	rig.m.Close()
	if cause := endedWith(t, ctx); cause != errShutdown {
		t.Fatalf("at Close: cause %v", cause)
	}
}

// TestManagerPrepareEndsWithoutASession: a sync for no session (the node
// lost it and cannot open another, as when its storage fails) abandons the
// prepares under way; it once panicked on the nil session.
func TestManagerPrepareEndsWithoutASession(t *testing.T) {
	rig := newPrepRig(t)
	if _, err := rig.m.Prepare(context.Background(), "me", rig.items(0), time.Millisecond); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	ctx := rig.nextCall()
	rig.grant("old", 1) // a new view to sync
	rig.m.Sync(rig.view(), nil)
	if cause := endedWith(t, ctx); cause != ErrAbandoned {
		t.Fatalf("synced without a session: cause %v", cause)
	}
}
