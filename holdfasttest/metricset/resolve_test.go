package metricset_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/holdfast-go/holdfast/holdfasttest/metricset"
)

// TestResolve checks the name matching the files checked against the
// metric set rely on: series suffixes are stripped from histograms only.
func TestResolve(t *testing.T) {
	families := map[string]dto.MetricType{
		"holdfast_h_seconds": dto.MetricType_HISTOGRAM,
		"holdfast_c":         dto.MetricType_COUNTER,
	}
	for name, want := range map[string]string{
		"holdfast_h_seconds":        "holdfast_h_seconds",
		"holdfast_h_seconds_bucket": "holdfast_h_seconds",
		"holdfast_h_seconds_sum":    "holdfast_h_seconds",
		"holdfast_h_seconds_count":  "holdfast_h_seconds",
		"holdfast_c":                "holdfast_c",
		"holdfast_c_count":          "",
		"holdfast_nope":             "",
		"holdfast_h":                "",
	} {
		got, ok := metricset.Resolve(families, name)
		if got != want || ok != (want != "") {
			t.Errorf("resolve(%s) = %q, %v; want %q", name, got, ok, want)
		}
	}
}
