package logbridge

import (
	"sort"
	"strings"
	"time"
)

// RepeatWindow is how long a warning or error about a peer that repeats
// (the same message with the same fields, a "peer" or "server-id" among
// them) is logged once: raft reports every failed heartbeat to an
// unreachable peer, several times a second, for as long as the peer stays
// in its configuration. Repeats within the window are logged at debug
// level; the first record after it is logged at its own level again, with
// "repeated" set to the number of repeats in between. Records that name no
// peer (an election, a lost quorum) are always logged at their level.
const RepeatWindow = 30 * time.Second

// volatileFields are record fields that differ between repeats of one
// condition, and so are not part of what makes records repeats.
var volatileFields = map[string]bool{
	"@timestamp": true, "@message": true, "@level": true,
	"backoff time": true, "error": true, "err": true, "last-index": true, "time": true,
}

// maxTracked bounds the repeat table; expired rows are dropped when it is
// full.
const maxTracked = 256

// repeat is a row of the repeat table.
type repeat struct {
	since      time.Time // when the last record logged at its own level was
	suppressed int       // records logged at debug level since then
}

// repeats tracks recent warnings and errors; its owner serialises calls.
type repeats struct {
	now  func() time.Time
	rows map[string]*repeat
}

// note records a warning or error with message msg and fields rec, and
// reports whether to log it at its own level (false: log it at debug) and
// how many repeats were suppressed before it.
func (r *repeats) note(msg string, rec map[string]any) (loud bool, suppressed int) {
	if !namesPeer(rec) {
		return true, 0
	}
	now := r.now()
	key := repeatKey(msg, rec)
	if row, ok := r.rows[key]; ok && now.Sub(row.since) < RepeatWindow {
		row.suppressed++
		return false, 0
	} else if ok {
		suppressed = row.suppressed
	}
	if r.rows == nil {
		r.rows = map[string]*repeat{}
	}
	if len(r.rows) >= maxTracked {
		for k, row := range r.rows {
			if now.Sub(row.since) >= RepeatWindow {
				delete(r.rows, k)
			}
		}
	}
	if len(r.rows) < maxTracked {
		r.rows[key] = &repeat{since: now}
	}
	return true, suppressed
}

// repeatKey is the message and the stable fields of a record.
func repeatKey(msg string, rec map[string]any) string {
	keys := make([]string, 0, len(rec))
	for k := range rec {
		if !volatileFields[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(msg)
	for _, k := range keys {
		b.WriteString("\x00" + k + "=")
		if s, ok := rec[k].(string); ok {
			b.WriteString(s)
		} else {
			b.WriteString("?")
		}
	}
	return b.String()
}

// peerFields are the fields in which raft names the peer a record is about.
var peerFields = []string{"peer", "server-id"}

func namesPeer(rec map[string]any) bool {
	for _, f := range peerFields {
		if _, ok := rec[f]; ok {
			return true
		}
	}
	return false
}
