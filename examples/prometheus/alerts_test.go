package prometheus_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/holdfast-go/holdfast/holdfasttest/metricset"
)

// ruleFiles are the files whose metric names must exist.
var ruleFiles = []string{"alerts.yml", "alerts_test.yml"}

// covered are the metrics the rules must alert on: no leader, no failure
// tolerance, sessions expiring, renewals failing, leases lost, fence
// rejections, unowned shards, transport and forward refusals.
var covered = []string{
	"holdfast_raft_leader",
	"holdfast_autopilot_failure_tolerance",
	"holdfast_session_expiries_total",
	"holdfast_keepalive_failures_total",
	"holdfast_leases_lost_total",
	"holdfast_fence_rejections_total",
	"holdfast_shards_unowned",
	"holdfast_transport_refused_total",
	"holdfast_forwards_refused_total",
}

// TestRuleMetricsExist checks that every holdfast_* name in the rules and
// in their unit tests' input series is a metric a real coordinator (and a
// fence) registers, and that the rules use every metric in covered.
func TestRuleMetricsExist(t *testing.T) {
	families := metricset.Gather(t)
	for _, file := range ruleFiles {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		used := map[string]bool{}
		for _, name := range metricset.Name.FindAllString(string(raw), -1) {
			if _, ok := metricset.Resolve(families, name); !ok {
				t.Errorf("%s uses %s, which no coordinator registers", file, name)
			}
			used[name] = true
		}
		if file != "alerts.yml" {
			continue
		}
		for _, name := range covered {
			if !used[name] {
				t.Errorf("alerts.yml has no rule on %s", name)
			}
		}
		t.Logf("%s: %d metric names, all registered", file, len(used))
	}
}

// TestPromtool runs promtool's syntax check of the rules and their unit
// tests, when promtool is installed (.ci/run installs it).
func TestPromtool(t *testing.T) {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: apt-get install prometheus); .ci/run installs it")
	}
	for _, args := range [][]string{
		{"check", "rules", "alerts.yml"},
		{"test", "rules", "alerts_test.yml"},
	} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
			continue
		}
		t.Logf("promtool %v:\n%s", args, out)
	}
}
