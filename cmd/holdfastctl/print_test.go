package main

import (
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/admin"
)

// TestPrintStatusGroup shows the raft group's health as status prints it:
// the fault tolerance, a degraded group with its unhealthy voters, and a
// node with no recent judgement.
func TestPrintStatusGroup(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name  string
		st    admin.Status
		wants []string
	}{
		{"healthy", admin.Status{
			Voters: []admin.Voter{{Name: "a", Healthy: &yes}, {Name: "b", Healthy: &yes}, {Name: "c", Healthy: &yes}},
			Group:  admin.GroupHealth{Known: true, FailureTolerance: 1, HealthyVoters: 3, Voters: 3, WantedVoters: 3, AgeSeconds: 2.4},
		}, []string{"voters:           a, b, c\n", "fault_tolerance:  1 (3 of 3 voters healthy, judged 2s ago)\n"}},
		{"degraded", admin.Status{
			Voters: []admin.Voter{{Name: "a", Healthy: &yes}, {Name: "b", Healthy: &no}, {Name: "c", Healthy: &yes}},
			Group: admin.GroupHealth{Known: true, Degraded: true, HealthyVoters: 2, Voters: 3, WantedVoters: 3,
				Unhealthy: []string{"b"}, AgeSeconds: 0.2},
		}, []string{"voters:           a, b (unhealthy), c\n",
			"fault_tolerance:  0, DEGRADED: 2 of 3 voters healthy (want 3), unhealthy: b; judged <1s ago\n"}},
		{"unknown", admin.Status{Voters: []admin.Voter{{Name: "a"}}, Group: admin.GroupHealth{Degraded: true}},
			[]string{"voters:           a\n", "fault_tolerance:  unknown: no recent judgement from a raft leader\n"}},
		// With 2 of 3 voters killed: unknown as soon as no leader is known,
		// not the last "3 of 3 voters healthy".
		{"no leader", admin.Status{Voters: []admin.Voter{{Name: "a"}, {Name: "b"}, {Name: "c"}},
			Group: admin.GroupHealth{Degraded: true, UnknownReason: "no raft leader known", FailureTolerance: 1,
				HealthyVoters: 3, Voters: 3, WantedVoters: 3, AgeSeconds: 14.2}},
			[]string{"fault_tolerance:  unknown: no raft leader known (last judged 14s ago: 3 of 3 voters healthy, fault tolerance 1)\n"}},
	} {
		var b strings.Builder
		tw := newTable(&b)
		printStatus(tw, &tc.st)
		tw.Flush()
		for _, want := range tc.wants {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, want, b.String())
			}
		}
	}
}
