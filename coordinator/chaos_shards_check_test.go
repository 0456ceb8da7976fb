package coordinator_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// The checks of TestChaos's shard history after each seed: I1 and I2 on
// the shard leases, I3 on their losses and I4 on the shard registers.

func (h *chaosHistory) describeShard(s *chaosShardLease, now time.Time) string {
	cause := "held"
	if err := s.l.Err(); err != nil {
		cause = err.Error()
	}
	return fmt.Sprintf("{shard %d token=%d node=%s start=%s end=%s done=%s cause=%q}",
		s.shard, s.token, s.nodeName, h.ms(s.start), h.ms(s.end(now)), h.ms(s.done), cause)
}

// checkShards verifies I1–I4 on the shard history (I6 is checked live).
// settle is as for chaosHistory.check.
func (r *chaosRun) checkShards(now time.Time, settle time.Duration) (violations []string, st chaosShardStats) {
	sh, h := r.sh, r.h
	sh.mu.Lock()
	defer sh.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	bad := func(format string, args ...any) {
		violations = append(violations, fmt.Sprintf(format, args...))
	}
	st.leases = len(sh.leases)
	st.causes = map[string]int{}
	perShard := map[coordinator.ShardID][]*chaosShardLease{}
	for _, s := range sh.leases {
		perShard[s.shard] = append(perShard[s.shard], s)
		cause := "held"
		if err := s.l.Err(); err != nil {
			cause = err.Error()
		}
		st.causes[cause]++
	}
	for shard, ls := range perShard {
		slices.SortFunc(ls, func(a, b *chaosShardLease) int {
			return cmp.Or(a.start.Compare(b.start), cmp.Compare(a.token, b.token))
		})
		for i, a := range ls {
			for _, b := range ls[i+1:] {
				if b.token == a.token {
					bad("I1: two holders of shard %d token %d: %s and %s", shard, a.token, h.describeShard(a, now), h.describeShard(b, now))
				}
			}
			if i > 0 && a.token <= ls[i-1].token {
				bad("I2: shard %d: token %d believed from %s after token %d believed from %s: %s after %s", shard,
					a.token, h.ms(a.start), ls[i-1].token, h.ms(ls[i-1].start), h.describeShard(a, now), h.describeShard(ls[i-1], now))
			}
			for _, b := range ls[i+1:] {
				if !b.start.Before(a.end(now)) {
					break
				}
				bad("I1: shard %d belief windows overlap by %v: %s and %s", shard, a.end(now).Sub(b.start),
					h.describeShard(a, now), h.describeShard(b, now))
			}
		}
	}
	sh.checkWrites(h, bad, &st)
	for _, s := range sh.leases {
		err := s.l.Err()
		if err == nil || errors.Is(err, coordinator.ErrRevoked) || errors.Is(err, coordinator.ErrShutdown) ||
			h.faultedLocked(s.node, s.start, s.end(now), now, settle) {
			continue
		}
		msg := fmt.Sprintf("I3: shard lost without a fault: %s (no fault touched %s between %s and %s)", h.describeShard(s, now),
			s.nodeName, h.ms(s.start), h.ms(s.end(now)))
		if errors.Is(err, coordinator.ErrSessionExpired) && !*chaosShardSessionI3 {
			st.sessionLosses = append(st.sessionLosses, msg)
			continue
		}
		bad("%s", msg)
	}
	return violations, st
}

// checkWrites verifies I4 on the shard registers.
func (sh *chaosShards) checkWrites(h *chaosHistory, bad func(string, ...any), st *chaosShardStats) {
	for shard, toks := range sh.accepted {
		for i := 1; i < len(toks); i++ {
			if toks[i] < toks[i-1] {
				bad("I4: %s accepted token %d after token %d", shardResource(shard), toks[i], toks[i-1])
			}
		}
	}
	for _, w := range sh.writes {
		switch {
		case w.zombie:
			st.zombieWrites++
			if w.accepted {
				bad("I4: zombie write of shard %d token %d from node%d at %s was accepted", w.shard, w.token, w.node, h.ms(w.at))
			} else {
				st.zombieRejected++
			}
		case w.accepted:
			st.writesAccepted++
		case w.heldAfter:
			bad("I1/I4: correct write of shard %d token %d from node%d at %s was fenced while its lease was still held",
				w.shard, w.token, w.node, h.ms(w.at))
		default:
			st.lateFenced++
		}
	}
	st.zombieSkipped = sh.zombieSkipped
}
