package coordinator_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// The checks of a TestChaos seed's lease history (chaos_history_test.go):
// I1–I4 on its grants and writes (I3 against the faults it recorded), and
// the seed's statistics.

// chaosStats is what a seed reports and what the whole run adds up.
type chaosStats struct {
	handles, grants                int
	writesAccepted, writesRejected int // correct writes (after a passing Checkpoint)
	lateFenced                     int // correct writes rejected after the lease ended meanwhile
	zombieWrites, zombieRejected   int
	zombieSkipped                  int
	causes                         map[string]int
	faults                         []string
}

// chaosGrantKey names one grant: a node that campaigns again for a lease
// its session holds gets a second handle with the same token.
type chaosGrantKey struct {
	name  string
	token uint64
}

// chaosGrantWin is one grant's handles and belief window (the union of
// theirs).
type chaosGrantWin struct {
	chaosGrantKey
	handles    []*chaosGrant
	start, end time.Time
}

// check verifies I1–I4 on the history and returns the violations found and
// the seed's statistics. settle is how long after a fault heals the nodes
// it touched still count as faulted for I3.
func (h *chaosHistory) check(now time.Time, settle time.Duration) (violations []string, st chaosStats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	bad := func(format string, args ...any) {
		violations = append(violations, fmt.Sprintf(format, args...))
	}
	st.causes = map[string]int{}
	st.handles = len(h.grants)
	byKey := h.groupLocked(now, st.causes)
	st.grants = len(byKey)
	h.checkHoldersLocked(byKey, now, bad)
	h.checkWindowsLocked(byKey, now, bad)
	h.checkWritesLocked(bad, &st)

	// I3: a holder on a node no fault touched during its whole belief
	// window (plus settle after each heal) loses its lease only by Release
	// or Shutdown.
	for _, g := range h.grants {
		if g.ended.IsZero() || errors.Is(g.cause, coordinator.ErrReleased) || errors.Is(g.cause, coordinator.ErrShutdown) {
			continue
		}
		if !h.faultedLocked(g.node, g.acquired, g.ended, now, settle) {
			bad("I3: false loss: %s (no fault touched %s between %s and %s)%s", h.describe(g, now), g.nodeName,
				h.ms(g.acquired), h.ms(g.ended), h.siblingNote(byKey[chaosGrantKey{g.name, g.token}].handles, g, now))
		}
	}

	faults := slices.Clone(h.faults)
	sort.Slice(faults, func(i, j int) bool { return faults[i].from.Before(faults[j].from) })
	for _, f := range faults {
		st.faults = append(st.faults, fmt.Sprintf("%s%v@%s+%v", f.kind, f.nodes, h.ms(f.from),
			cmp.Or(f.to, now).Sub(f.from).Round(time.Millisecond)))
	}
	return violations, st
}

// groupLocked groups the handles into grants by (name, token) and counts
// the handles' end causes. h.mu is held.
func (h *chaosHistory) groupLocked(now time.Time, causes map[string]int) map[chaosGrantKey]*chaosGrantWin {
	byKey := map[chaosGrantKey]*chaosGrantWin{}
	for _, g := range h.grants {
		k := chaosGrantKey{g.name, g.token}
		w := byKey[k]
		if w == nil {
			w = &chaosGrantWin{chaosGrantKey: k, start: g.acquired, end: g.beliefEnd(now)}
			byKey[k] = w
		}
		w.handles = append(w.handles, g)
		if g.acquired.Before(w.start) {
			w.start = g.acquired
		}
		if e := g.beliefEnd(now); e.After(w.end) {
			w.end = e
		}
		cause := "held"
		if g.cause != nil {
			cause = g.cause.Error()
		}
		causes[cause]++
	}
	return byKey
}

// checkHoldersLocked checks that each grant has one holder (I1) and that
// no Acquire returned a stale token (I2). h.mu is held.
func (h *chaosHistory) checkHoldersLocked(byKey map[chaosGrantKey]*chaosGrantWin, now time.Time, bad func(string, ...any)) {
	// I1, second half: at most one holder (node and session) per (name, token).
	for _, w := range byKey {
		for _, g := range w.handles[1:] {
			if g.node != w.handles[0].node || (g.session != "" && w.handles[0].session != "" && g.session != w.handles[0].session) {
				bad("I1: two holders of %s token %d: %s and %s", w.name, w.token, h.describe(w.handles[0], now), h.describe(g, now))
			}
		}
	}

	// I2, per handle: no Acquire returns a token lower than one already
	// returned for the name (a second handle of the same grant has the
	// same token; a lower one is a stale grant).
	handles := slices.Clone(h.grants)
	// Ties (one instant of the simulation's virtual time) go in token
	// order, the order raft granted them in.
	slices.SortFunc(handles, func(a, b *chaosGrant) int {
		return cmp.Or(a.acquired.Compare(b.acquired), cmp.Compare(a.token, b.token))
	})
	maxSeen := map[string]*chaosGrant{}
	for _, g := range handles {
		if m := maxSeen[g.name]; m != nil && g.token < m.token {
			bad("I2: stale grant: Acquire on %s returned %s token %d at %s, after token %d was returned on %s at %s: %s",
				g.nodeName, g.name, g.token, h.ms(g.acquired), m.token, m.nodeName, h.ms(m.acquired), h.describe(g, now))
			continue
		}
		maxSeen[g.name] = g
	}
}

// checkWindowsLocked checks per name that tokens increase in order of
// acquisition (I2) and that belief windows never overlap (I1, no
// tolerance). h.mu is held.
func (h *chaosHistory) checkWindowsLocked(byKey map[chaosGrantKey]*chaosGrantWin, now time.Time, bad func(string, ...any)) {
	perName := map[string][]*chaosGrantWin{}
	for _, w := range byKey {
		perName[w.name] = append(perName[w.name], w)
	}
	describe := func(w *chaosGrantWin) string {
		var hs []string
		for _, g := range w.handles {
			hs = append(hs, h.describe(g, now))
		}
		return strings.Join(hs, " ")
	}
	for name, ws := range perName {
		slices.SortFunc(ws, func(a, b *chaosGrantWin) int { return cmp.Or(a.start.Compare(b.start), cmp.Compare(a.token, b.token)) })
		for i := 1; i < len(ws); i++ {
			if ws[i].token <= ws[i-1].token {
				bad("I2: %s token %d acquired at %s after token %d acquired at %s", name,
					ws[i].token, h.ms(ws[i].start), ws[i-1].token, h.ms(ws[i-1].start))
			}
		}
		for i := range ws {
			for j := i + 1; j < len(ws) && ws[j].start.Before(ws[i].end); j++ {
				note := ""
				for _, g := range ws[i].handles {
					if g.beliefEnd(now).After(ws[j].start) {
						note += h.siblingNote(ws[i].handles, g, now)
					}
				}
				bad("I1: belief windows overlap by %v on %s: token %d [%s, %s] %s and token %d [%s, %s] %s%s",
					ws[i].end.Sub(ws[j].start), name,
					ws[i].token, h.ms(ws[i].start), h.ms(ws[i].end), describe(ws[i]),
					ws[j].token, h.ms(ws[j].start), h.ms(ws[j].end), describe(ws[j]), note)
			}
		}
	}
}

// checkWritesLocked checks the lease registers (I4). h.mu is held.
func (h *chaosHistory) checkWritesLocked(bad func(string, ...any), st *chaosStats) {
	// I4: the register never accepted a lower token than an earlier one.
	for res, toks := range h.accepted {
		for i := 1; i < len(toks); i++ {
			if toks[i] < toks[i-1] {
				bad("I4: %s accepted token %d after token %d", res, toks[i], toks[i-1])
			}
		}
	}
	for _, w := range h.writes {
		switch {
		case w.zombie:
			st.zombieWrites++
			if w.accepted {
				bad("I4: zombie write of %s token %d from node%d at %s was accepted", w.name, w.token, w.node, h.ms(w.at))
			} else {
				st.zombieRejected++
			}
		case w.accepted:
			st.writesAccepted++
		default:
			st.writesRejected++
			if w.heldAfter {
				// A higher token was accepted while this holder, whose
				// Checkpoint had just passed, still held its lease.
				bad("I1/I4: correct write of %s token %d from node%d at %s was fenced while its lease was still held",
					w.name, w.token, w.node, h.ms(w.at))
			} else {
				st.lateFenced++
			}
		}
	}
	st.zombieSkipped = h.zombieSkipped
}

// faultedLocked reports whether a fault touched node between from and to,
// counting each healed fault until settle after its heal (an unhealed one
// until now). h.mu is held.
func (h *chaosHistory) faultedLocked(node int, from, to, now time.Time, settle time.Duration) bool {
	for _, f := range h.faults {
		end := now
		if !f.to.IsZero() {
			end = f.to.Add(settle)
		}
		if slices.Contains(f.nodes, node) && !f.from.After(to) && !end.Before(from) {
			return true
		}
	}
	return false
}
