// Package examples holds runnable programs that embed holdfast the way an
// application would. Nothing in the library imports them.
//
//   - demo: forms a 3-node cluster on loopback and narrates it
//     (go run ./examples/demo).
//   - grafana: a Grafana dashboard on holdfast's metrics (holdfast.json).
//   - gometrics: bridging raft's and memberlist's go-metrics into a
//     Prometheus registry.
package examples
