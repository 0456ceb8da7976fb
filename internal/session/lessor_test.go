package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

const testTTL = 10 * time.Second

// TestLessorExpiresOnlyAfterDeadline: a session the lessor tracks is
// expired (its expiry committed) only once the leader's clock reaches its
// deadline, not an instant before; from then its keepalives are refused.
func TestLessorExpiresOnlyAfterDeadline(t *testing.T) {
	r := newLessorRig(t, 1)
	r.rep.create(t, "s1", testTTL)
	r.l.Activate(r.rep.f.View())
	start := r.wall.Now()
	deadline, ok := r.l.Deadline("s1")
	if want := start.Add(testTTL + r.grace); !ok || !deadline.Equal(want) {
		t.Fatalf("deadline after activation = %v (%v), want %v", deadline, ok, want)
	}
	r.wall.advance(deadline.Sub(start) - time.Nanosecond)
	r.step()
	if !r.rep.has("s1") || r.expired.Load() != 0 {
		t.Fatal("session expired before its deadline")
	}
	if r.l.ExpiringOrDue("s1", r.wall.Now()) {
		t.Fatal("ExpiringOrDue before the deadline")
	}
	r.wall.advance(time.Nanosecond)
	r.step()
	if r.rep.has("s1") || r.expired.Load() != 1 {
		t.Fatalf("session not expired at its deadline (expiries %d)", r.expired.Load())
	}
	if _, err := r.keepAlive(t, "s1"); !errors.Is(err, ErrNoSession) {
		t.Fatalf("keepalive for an expired session: %v, want ErrNoSession", err)
	}
}

// TestLessorKeepAliveExtends: an answered keepalive moves the deadline to
// its arrival + TTL on the leader's clock, never back; the session then
// lives until that new deadline.
func TestLessorKeepAliveExtends(t *testing.T) {
	r := newLessorRig(t, 1)
	r.rep.create(t, "s1", testTTL)
	r.l.Activate(r.rep.f.View())
	first, _ := r.l.Deadline("s1")

	// Early: arrival + TTL is before the activation deadline; it stays.
	r.wall.advance(time.Second)
	if _, err := r.keepAlive(t, "s1"); err != nil {
		t.Fatal(err)
	}
	if d, _ := r.l.Deadline("s1"); !d.Equal(first) {
		t.Fatalf("an early keepalive moved the deadline from %v to %v", first, d)
	}

	arrived := r.wall.advance(8 * time.Second)
	index, err := r.keepAlive(t, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if want := r.rep.f.View().Index(); index != want {
		t.Fatalf("keepalive answered with index %d, replica at %d", index, want)
	}
	want := arrived.Add(testTTL)
	if d, _ := r.l.Deadline("s1"); !d.Equal(want) {
		t.Fatalf("deadline after keepalive = %v, want arrival + TTL = %v", d, want)
	}
	r.wall.advance(want.Sub(arrived) - time.Nanosecond) // past the first deadline
	r.step()
	if !r.rep.has("s1") {
		t.Fatal("session expired at its old deadline despite the keepalive")
	}
	r.wall.advance(time.Nanosecond)
	r.step()
	if r.rep.has("s1") {
		t.Fatal("session not expired at its extended deadline")
	}
}

// TestLessorKeepAliveRefusals: a keepalive is refused for a session the
// replica does not have, for one whose expiry is decided (even if the
// expiry has not committed), and by an inactive lessor; a refused one
// extends nothing.
func TestLessorKeepAliveRefusals(t *testing.T) {
	r := newLessorRig(t, 1)
	r.rep.create(t, "s1", testTTL)
	if _, err := r.keepAlive(t, "s1"); !errors.Is(err, errNotLeaderTest) {
		t.Fatalf("keepalive to an inactive lessor: %v, want the not-leader error", err)
	}
	r.l.Activate(r.rep.f.View())
	if _, err := r.keepAlive(t, "nope"); !errors.Is(err, ErrNoSession) {
		t.Fatalf("keepalive for an unknown session: %v, want ErrNoSession", err)
	}

	// The expiry is decided but cannot commit (no quorum for the log).
	d, _ := r.l.Deadline("s1")
	r.wall.advance(d.Sub(r.wall.Now()))
	r.rep.setFail(errors.New("commit timed out (test)"))
	r.step()
	if !r.rep.has("s1") {
		t.Fatal("the expiry committed although the replica refused it")
	}
	if !r.l.ExpiringOrDue("s1", r.wall.Now()) {
		t.Fatal("ExpiringOrDue false for a session whose expiry is decided")
	}
	if _, err := r.keepAlive(t, "s1"); !errors.Is(err, ErrNoSession) {
		t.Fatalf("keepalive for a session being expired: %v, want ErrNoSession", err)
	}
	if got, _ := r.l.Deadline("s1"); !got.Equal(d) {
		t.Fatalf("a refused keepalive moved the deadline to %v", got)
	}
	// It is retried on the next pass and commits then.
	r.rep.setFail(nil)
	r.step()
	if r.rep.has("s1") {
		t.Fatal("the expiry was not retried")
	}

	r.rep.create(t, "s2", testTTL)
	r.step()
	r.l.Deactivate()
	if _, err := r.keepAlive(t, "s2"); !errors.Is(err, errNotLeaderTest) {
		t.Fatalf("keepalive after deactivation: %v, want the not-leader error", err)
	}
	if _, ok := r.l.Deadline("s2"); ok {
		t.Fatal("a deactivated lessor still tracks deadlines")
	}
}

// TestLessorGraceOnPromotion: a newly active lessor gives every session in
// the replica now + TTL + ExpiryGrace, however long ago the session was
// last renewed, and expires none of them before that; a session created
// after activation gets now + TTL.
func TestLessorGraceOnPromotion(t *testing.T) {
	r := newLessorRig(t, 1)
	for _, id := range []string{"s1", "s2", "s3"} {
		r.rep.create(t, id, testTTL)
	}
	// A previous lessor tracked them, and their deadlines passed long ago
	// on its clock; then it lost the leadership.
	r.l.Activate(r.rep.f.View())
	r.l.Deactivate()
	r.wall.advance(time.Hour)

	r.l.Activate(r.rep.f.View())
	promoted := r.wall.Now()
	r.step()
	for _, id := range []string{"s1", "s2", "s3"} {
		d, ok := r.l.Deadline(id)
		if !ok || d.Before(promoted.Add(testTTL+r.grace)) {
			t.Fatalf("%s: deadline %v after promotion at %v, want at least now + TTL + grace", id, d, promoted)
		}
	}
	r.rep.create(t, "late", testTTL)
	r.step()
	if d, _ := r.l.Deadline("late"); !d.Equal(promoted.Add(testTTL)) {
		t.Fatalf("session created after activation: deadline %v, want now + TTL", d)
	}
	r.wall.advance(testTTL + r.grace - time.Nanosecond)
	r.step()
	for _, id := range []string{"s1", "s2", "s3"} {
		if !r.rep.has(id) {
			t.Fatalf("%s expired before TTL + grace after promotion", id)
		}
	}
	r.wall.advance(time.Nanosecond)
	r.step()
	if n := r.expired.Load(); n != 4 {
		t.Fatalf("%d expiries after every deadline passed, want 4", n)
	}
}

// TestLessorNextDeadline: the loop wakes at the earliest deadline, and
// soon for an expiry that did not commit.
func TestLessorNextDeadline(t *testing.T) {
	r := newLessorRig(t, 1)
	r.rep.create(t, "s1", testTTL)
	r.l.Activate(r.rep.f.View())
	if got, want := r.l.nextDeadline(), testTTL+r.grace; got != want {
		t.Fatalf("next wake in %v, want %v", got, want)
	}
	r.wall.advance(testTTL + r.grace)
	r.rep.setFail(errors.New("no commit (test)"))
	r.step()
	if got := r.l.nextDeadline(); got > 100*time.Millisecond {
		t.Fatalf("next wake in %v after a failed expiry, want a retry within 100ms", got)
	}
}

// TestLessorRunFollowsReplica: Run activates the lessor (grace for the
// sessions it finds), picks up sessions the replica gains, expires the due
// ones when it wakes, and deactivates when its context ends.
func TestLessorRunFollowsReplica(t *testing.T) {
	r := newLessorRig(t, 1)
	r.rep.create(t, "old", testTTL)
	activated := make(chan time.Time, 1)
	r.l.SetTestHooks(func(at time.Time) { activated <- at }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.l.Run(ctx)
	}()
	at := <-activated
	if d, ok := r.l.Deadline("old"); !ok || !d.Equal(at.Add(testTTL+r.grace)) {
		t.Fatalf("deadline of a session found at activation: %v %v", d, ok)
	}
	r.rep.create(t, "new", testTTL) // wakes Run through the view
	testkit.Eventually(t, "Run to pick up the new session", time.Minute, testkit.Holds(func() bool {
		_, ok := r.l.Deadline("new")
		return ok
	}))
	r.wall.advance(testTTL) // "new" is due, "old" (with grace) is not
	r.rep.create(t, "wake", 2*testTTL)
	testkit.Eventually(t, "Run to expire the due session", time.Minute, testkit.Holds(func() bool { return !r.rep.has("new") }))
	if !r.rep.has("old") {
		t.Fatal("Run expired a session still within its grace")
	}
	cancel()
	<-done
	if _, ok := r.l.Deadline("old"); ok {
		t.Fatal("the lessor still tracks deadlines after Run returned")
	}
	if _, err := r.keepAlive(t, "old"); !errors.Is(err, errNotLeaderTest) {
		t.Fatalf("keepalive after Run returned: %v, want the not-leader error", err)
	}
}
