package logbridge

import "log/slog"

// Raft logs some steps of a normal start as warnings: a node with no
// configuration yet (waiting to bootstrap or to be added) "aborting
// election" for want of peers, and the first election of a new cluster
// ("heartbeat timeout reached" when no leader was ever known). An operator
// reading warnings on every start learns to ignore warnings; these are
// logged at info level. The same messages after a leader was known (a
// lost leader) keep their level.

// normalStart returns the level for a warning raft logs on a normal start,
// and false for any other record.
func normalStart(msg string, rec map[string]any) (slog.Level, bool) {
	switch msg {
	case "no known peers, aborting election":
		return slog.LevelInfo, true
	case "heartbeat timeout reached, starting election":
		if addr, _ := rec["last-leader-addr"].(string); addr == "" {
			return slog.LevelInfo, true
		}
	}
	return 0, false
}
