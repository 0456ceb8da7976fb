// Package prometheus holds alerts.yml, Prometheus alerting rules over the
// holdfast_* metrics (docs/METRICS.md), and alerts_test.yml, their unit
// tests for promtool. The package has no code. Its tests check that every
// metric the rules (and their unit tests) name is one a real coordinator
// registers, that the rules cover the conditions an operator must hear
// about, and, where promtool is installed, run
//
//	promtool check rules alerts.yml
//	promtool test rules alerts_test.yml
//
// .ci/run installs promtool (Debian's prometheus package) and runs both.
//
// # The alerts
//
//   - HoldfastNoLeader (critical): no node has been raft leader for 1m.
//   - HoldfastNoFailureTolerance: autopilot on the leader sees a failure
//     tolerance of 0 for 5m: one more voter down loses the quorum.
//   - HoldfastSessionsExpiring: the leader expired sessions in the last 10m.
//   - HoldfastKeepaliveFailures: a node's session keepalives have been
//     failing for 5m.
//   - HoldfastLeasesLost: a node lost leases involuntarily (reason expired
//     or lost) in the last 10m.
//   - HoldfastFenceRejections: a fence rejected stale writes in the last 5m.
//   - HoldfastShardsUnowned: shards have had no owner for 2m.
//   - HoldfastTransportRefusals: the RPC port refused connections or frames
//     (any reason but an occasional bad handshake).
//   - HoldfastForwardsRefused: the leader has been refusing forwarded
//     commands (more than it lets wait at once) for 10m.
//
// Load the file with
//
//	rule_files:
//	  - /etc/prometheus/holdfast/alerts.yml
//
// The "for" durations assume the default timings (Config.Session.TTL 10s); scale
// them with a much longer TTL.
package prometheus
