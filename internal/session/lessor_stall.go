package session

import "time"

// defaultStallThreshold is LessorOptions.StallThreshold's zero value: a
// tenth of the default session TTL (10s).
const defaultStallThreshold = time.Second

// stallThreshold is the longest gap in the lessor's own running that is
// not treated as a stall.
func (l *Lessor) stallThreshold() time.Duration {
	if l.o.StallThreshold > 0 {
		return l.o.StallThreshold
	}
	return defaultStallThreshold
}

// beatEvery is the longest the Run loop waits between two passes, so that
// a pass that comes later than stallThreshold after the previous one can
// only be a stall (a frozen or starved process, or a pass held up by a long
// commit), never an idle wait.
func (l *Lessor) beatEvery() time.Duration { return max(l.stallThreshold()/2, time.Millisecond) }

// observe is the stall check every pass of the lessor's loop starts with,
// before it decides any expiry. A gap since the previous pass longer than
// the stall threshold means the lessor may not have been able to run for
// that long, and then neither may the keepalives it answers (a process
// frozen or starved of CPU runs neither), or it was held up by a commit
// that long: keepalives sent in that time may still be on their way in. As
// a new leader does (rule 3), it then extends every deadline before it
// decides any expiry: each session keeps the time it had left when the
// stall began, and at least one threshold from now for keepalives queued
// during the stall to reach the lessor: deadline = max(deadline + gap, now
// + threshold). It returns the gap it extended by (0: none).
//
// Extending only moves the leader's own deadlines later: a holder's belief
// counts from its keepalive's send time and never reached past the old
// deadline, so it ends before the new one too. A dead holder's expiry is
// delayed by the time the leader lost, plus at most one threshold per
// stall.
func (l *Lessor) observe(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active {
		return 0
	}
	gap := now.Sub(l.lastBeat)
	l.lastBeat = now
	if gap <= l.stallThreshold() {
		return 0
	}
	for id, d := range l.deadlines {
		l.deadlines[id] = later(d.Add(gap), now.Add(l.stallThreshold()))
	}
	l.stalls++
	l.stalled += gap
	l.o.Metrics.stalled(gap)
	l.log.Warn("lessor stalled: every session's deadline extended before deciding any expiry",
		"gap", gap, "threshold", l.stallThreshold(), "sessions", len(l.deadlines))
	return gap
}

// Stalls reports how many stalls this lessor detected and their total
// length, over its lifetime.
func (l *Lessor) Stalls() (n int, total time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stalls, l.stalled
}

// SetPauseHook installs a test hook (nil: none): hold is called at the
// start of every pass of Run's loop and as every keepalive reaches
// KeepAlive, so a test can freeze the lessor as a stalled leader would be
// frozen by blocking in it.
func (l *Lessor) SetPauseHook(hold func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pause = hold
}

// held calls the pause hook, if any.
func (l *Lessor) held() {
	l.mu.Lock()
	hold := l.pause
	l.mu.Unlock()
	if hold != nil {
		hold()
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
