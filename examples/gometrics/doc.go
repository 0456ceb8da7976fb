// Package gometrics shows how an application bridges the metrics of
// hashicorp/raft and hashicorp/memberlist into its own Prometheus registry,
// beside holdfast's own holdfast_* metrics. It has no API: its example and
// test are the documentation (see docs/METRICS.md, "raft and memberlist
// metrics").
//
// # Why a bridge
//
// holdfast registers its metrics only on Config.Registerer. The libraries
// under it, raft (v1.7) and memberlist (v0.6), do not take a registerer:
// they emit through github.com/hashicorp/go-metrics/compat, a process-global
// sink that is a black hole until someone installs a real one. holdfast
// never installs it (no package-level state, and the choice of sink belongs
// to the application), so raft's and memberlist's metrics (raft.commitTime,
// raft.fsm.apply, raft.leader.lastContact, memberlist.gossip,
// memberlist.msg.suspect, …) are discarded unless the application installs
// a sink, once per process, before the first coordinator starts:
//
//	sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
//		Name:       "myapp_go_metrics_sink", // unique per registry
//		Registerer: reg,                     // the application's registry
//	})
//	if err != nil {
//		return err
//	}
//	cfg := compat.DefaultConfig("myapp") // names become myapp_raft_…, myapp_memberlist_…
//	cfg.EnableHostname = false           // else gauges are named myapp_<hostname>_…
//	cfg.EnableRuntimeMetrics = false     // else a goroutine that never stops duplicates the Go collector
//	if _, err := compat.NewGlobal(cfg, sink); err != nil {
//		return err
//	}
//
// where compat is github.com/hashicorp/go-metrics/compat and gmprom is
// github.com/hashicorp/go-metrics/compat/prometheus.
//
// # Build tags
//
// compat forwards to github.com/armon/go-metrics by default and to
// github.com/hashicorp/go-metrics when the program is built with
// -tags hashicorpmetrics; compat/prometheus follows the same tag, so the
// code above installs the sink raft and memberlist actually use in either
// build.
//
// # Caveats
//
//   - The sink is global: every coordinator in the process (and anything
//     else that uses go-metrics) reports into it, without a label telling
//     the coordinators apart. holdfast's own metrics have no such limit:
//     give each coordinator its own registry.
//   - Use a service name other than "holdfast", so bridged names never mix
//     with holdfast_* ones.
//   - PrometheusOpts.Expiration drops a series not updated for that long;
//     zero (as above) keeps every series. Counters of rare events (raft
//     elections) need a long expiration or none to stay visible; a gauge
//     that only a raft leader sets then keeps its last value after the
//     node loses leadership.
//   - Timers (raft.commitTime, memberlist.gossip, …) become Prometheus
//     summaries in milliseconds, not histograms in seconds.
package gometrics
