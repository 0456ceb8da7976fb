package session

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

const testStall = time.Second // the stall threshold of these tests (TTL/10)

// steady runs one lessor pass every half stall threshold for d: a leader
// that runs normally.
func (r *lessorRig) steady(d time.Duration) {
	for end := r.wall.Now().Add(d); r.wall.Now().Before(end); {
		r.wall.advance(testStall / 2)
		r.step()
	}
}

// TestLessorStallExtendsDeadlines: a gap between two passes longer than
// the stall threshold (here longer than TTL + grace: every deadline passed
// during it) extends every deadline before any expiry is decided: each
// session keeps the time it had left when the stall began, and at least
// one threshold after it; nobody expires during or just after it. A holder
// that truly stopped is still expired once the leader has run normally
// past its extended deadline.
func TestLessorStallExtendsDeadlines(t *testing.T) {
	r := newStallRig(t, 1, testStall)
	r.rep.create(t, "s1", testTTL)
	r.rep.create(t, "s2", testTTL)
	activated := r.wall.Now()
	r.l.Activate(r.rep.f.View())
	r.steady(testTTL + r.grace - testStall/2)
	r.wall.advance(testStall/2 - time.Nanosecond) // s1's deadline is 1ns away
	r.step()
	if _, err := r.keepAlive(t, "s2"); err != nil { // s2 renewed just before the stall
		t.Fatal(err)
	}
	s2before, _ := r.l.Deadline("s2")

	const gap = 3 * testTTL
	resumed := r.wall.advance(gap) // frozen: no pass, no keepalive
	r.step()
	d1, _ := r.l.Deadline("s1")
	if !r.rep.has("s1") || d1.Before(resumed.Add(testStall)) {
		t.Fatalf("s1 after a %v stall: kept %v, deadline %v; want kept, deadline ≥ resume + threshold = %v",
			gap, r.rep.has("s1"), d1, resumed.Add(testStall))
	}
	if d2, _ := r.l.Deadline("s2"); !r.rep.has("s2") || d2.Before(s2before.Add(gap)) {
		t.Fatalf("s2 after a %v stall: kept %v, deadline %v; want kept, deadline ≥ %v + gap", gap, r.rep.has("s2"), d2, s2before)
	}
	if n, total := r.l.Stalls(); n != 1 || total < gap {
		t.Fatalf("Stalls() = %d, %v; want 1, ≥ %v", n, total, gap)
	}

	// Just after the stall nobody expires; the holders never come back,
	// and once the leader has run normally past the extended deadlines
	// they are expired.
	r.steady(testStall / 2)
	if r.expired.Load() != 0 {
		t.Fatalf("%d expiries just after the stall", r.expired.Load())
	}
	r.steady(testTTL + testStall)
	if r.rep.has("s1") || r.rep.has("s2") {
		t.Fatalf("a holder that stopped was not expired after the extended deadline (activated %v)", activated)
	}
	if n, _ := r.l.Stalls(); n != 1 {
		t.Fatalf("%d stalls detected while running normally after the first", n)
	}
}

// TestLessorNoExtensionWithoutStall: a lessor whose passes come within the
// stall threshold of each other extends nothing: a holder that stopped
// renewing is expired exactly at its deadline (TTL + grace after
// activation).
func TestLessorNoExtensionWithoutStall(t *testing.T) {
	r := newStallRig(t, 1, testStall)
	r.rep.create(t, "s1", testTTL)
	r.l.Activate(r.rep.f.View())
	want, _ := r.l.Deadline("s1")
	for r.rep.has("s1") {
		r.wall.advance(testStall) // at the threshold, not past it
		r.step()
		if d, ok := r.l.Deadline("s1"); ok && !d.Equal(want) {
			t.Fatalf("deadline moved from %v to %v without a stall", want, d)
		}
		if r.wall.Now().After(want) {
			t.Fatalf("session still there at %v, after its deadline %v", r.wall.Now(), want)
		}
	}
	if !r.wall.Now().Equal(want) {
		t.Fatalf("expired at %v, want at its deadline %v", r.wall.Now(), want)
	}
	if n, _ := r.l.Stalls(); n != 0 {
		t.Fatalf("%d stalls detected without one", n)
	}
}

// TestLessorRunChecksStallFirst: Run's loop, woken after a stall longer
// than every deadline, extends them before it expires anyone; it wakes by
// itself (no replica change) at least every half threshold to notice.
func TestLessorRunChecksStallFirst(t *testing.T) {
	r := newStallRig(t, 1, 20*time.Millisecond) // Run wakes every 10ms of real time
	r.rep.create(t, "s1", testTTL)
	activated := make(chan time.Time, 1)
	r.l.SetTestHooks(func(at time.Time) { activated <- at }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.l.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	<-activated
	r.wall.advance(3 * testTTL) // the fake clock jumps: a stall as Run sees it
	testkit.Eventually(t, "Run to detect the stall", time.Minute, testkit.Holds(func() bool { n, _ := r.l.Stalls(); return n == 1 }))
	if !r.rep.has("s1") || r.expired.Load() != 0 {
		t.Fatal("Run expired a session before extending its deadline for the stall")
	}
}

// TestKeepAliveNotQueuedBehindApply: while the lessor's loop is held up
// committing an expiry (a long raft apply), keepalives for other sessions
// are still answered and extend their deadlines: the keepalive path shares
// no lock or queue with the loop's commits. The apply's length then counts
// as a stall when the loop resumes.
func TestKeepAliveNotQueuedBehindApply(t *testing.T) {
	r := newStallRig(t, 3, testStall)
	r.rep.create(t, "dead", testTTL/2)
	r.rep.create(t, "live", testTTL)
	inApply, release := make(chan struct{}), make(chan struct{})
	r.beforeExpire = func() {
		close(inApply)
		<-release
	}
	r.l.Activate(r.rep.f.View())
	r.steady(testTTL/2 + r.grace - testStall/2)
	r.wall.advance(testStall / 2) // "dead" is due
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		r.step()
	}()
	<-inApply
	arrived := r.wall.advance(testTTL / 2) // the apply takes long
	if _, err := r.keepAlive(t, "live"); err != nil {
		t.Fatalf("keepalive during a long apply: %v", err)
	}
	if d, _ := r.l.Deadline("live"); !d.Equal(arrived.Add(testTTL)) {
		t.Fatalf("deadline after a keepalive answered during the apply: %v, want %v", d, arrived.Add(testTTL))
	}
	close(release)
	<-stepped
	if r.rep.has("dead") {
		t.Fatal("the expiry decided before the apply did not commit")
	}
	r.wall.advance(testStall / 2)
	r.step()
	if n, total := r.l.Stalls(); n != 1 || total < testTTL/2 {
		t.Fatalf("Stalls() = %d, %v after a %v apply; want it counted", n, total, testTTL/2)
	}
}

// TestLessorPassReadsTheClockOnce: a pause (here, the clock jumping three
// TTLs) right after a pass read the clock does not expire anyone in that
// pass, whose stall check saw no gap; the next pass sees the gap and
// extends every deadline before deciding any expiry. With a second reading
// of the clock for the expiries, the pass expired s1 (CI caught it as
// TestLessorRunChecksStallFirst failing under the race detector, where Run
// read the clock between its stall check and its expiries).
func TestLessorPassReadsTheClockOnce(t *testing.T) {
	r := newStallRig(t, 1, testStall)
	var jump atomic.Bool
	o := r.l.o
	o.Now = func() time.Time {
		now := r.wall.Now()
		if jump.Swap(false) {
			r.wall.advance(3 * testTTL) // the process pauses after this reading
		}
		return now
	}
	l := NewLessor(o)
	r.rep.create(t, "s1", testTTL)
	l.Activate(r.rep.f.View())
	jump.Store(true)
	l.pass(context.Background(), r.rep.f.View())
	if !r.rep.has("s1") {
		t.Fatal("the pass expired s1 on a reading of the clock its stall check did not see")
	}
	l.pass(context.Background(), r.rep.f.View())
	if n, _ := l.Stalls(); n != 1 || !r.rep.has("s1") {
		t.Fatalf("after the next pass: %d stalls (want 1), s1 there: %v (want true)", n, r.rep.has("s1"))
	}
}
