// Package metricset gives tests the real set of holdfast metrics, so that
// files naming metrics (the Grafana dashboard, the Prometheus alert rules,
// docs/METRICS.md) are checked against what a coordinator registers rather
// than against a list kept by hand.
package metricset
