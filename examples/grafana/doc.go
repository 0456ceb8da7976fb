// Package grafana holds holdfast.json, a Grafana dashboard over the
// holdfast_* metrics that every coordinator registers on Config.Registerer
// (docs/METRICS.md lists them). The package has no code: its test checks
// that every metric the dashboard queries is one a real coordinator
// registers, so the dashboard cannot drift from the code unnoticed, and
// that docs/METRICS.md has one table row per registered metric.
//
// # Importing
//
// In Grafana (10 or later), open Dashboards → New → Import, upload
// examples/grafana/holdfast.json (or paste it), and pick the Prometheus
// data source that scrapes your holdfast nodes. To provision it instead,
// copy the file into a directory named by a dashboard provider, e.g.
//
//	# /etc/grafana/provisioning/dashboards/holdfast.yaml
//	apiVersion: 1
//	providers:
//	  - name: holdfast
//	    type: file
//	    options:
//	      path: /var/lib/grafana/dashboards/holdfast
//
// # Variables
//
//   - datasource: any Prometheus data source.
//   - job, instance: the scrape job and the nodes, read from
//     holdfast_raft_term (multi-select, "All" by default).
//
// Panels are grouped as docs/METRICS.md groups the metrics: shards,
// sessions, leases, fencing and refusals (fence rejections, forwarded
// commands the leader refused, transport refusals by reason with the TLS
// reasons on a panel of their own), raft. Values only the raft leader counts
// (handoffs, forced releases, unowned shard-seconds, session expiries,
// autopilot) are summed over the job or read where holdfast_raft_leader is
// 1. Fence rejections are not filtered by job or instance: they come from
// the resource side, which may be another service.
package grafana
