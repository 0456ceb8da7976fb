// Package examples holds runnable programs that embed holdfast the way an
// application would. Nothing in the library imports them.
//
//   - demo: forms a 3-node cluster on loopback, with mutual TLS from an
//     in-process CA, and narrates it (go run ./examples/demo).
//   - ledger: a service with fenced SQLite writes per shard, run as real
//     processes; mutual TLS from holdfastctl cert files by default
//     (-insecure to opt out).
//   - grafana: a Grafana dashboard on holdfast's metrics (holdfast.json).
//   - gometrics: bridging raft's and memberlist's go-metrics into a
//     Prometheus registry.
package examples
