package admin_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// groupOf reads the group health in a node's /v1/status.
func groupOf(url string) (admin.Status, error) {
	var st admin.Status
	err := getJSON(url+"/v1/status", &st)
	return st, err
}

// TestGroupHealthOnEveryNode shows the raft group's health in /v1/status
// and in /healthz?verbose on every node, followers included: all healthy
// with a fault tolerance of 1, then degraded with tolerance 0 and the cut
// voter named while one voter is cut off, then healthy again.
func TestGroupHealthOnEveryNode(t *testing.T) {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true})
	leader := cl.WaitFormed(settle)
	urls := map[int]string{}
	for _, n := range cl.Running() {
		urls[n.Index] = serve(t, n.C()).URL
	}
	want := func(nodes []int, check func(admin.Status) error) func() error {
		return func() error {
			for _, i := range nodes {
				st, err := groupOf(urls[i])
				if err != nil {
					return err
				}
				if err := check(st); err != nil {
					return fmt.Errorf("%w: node%d: %v: %+v", holdfasttest.ErrNotYet, i, err, st.Group)
				}
			}
			return nil
		}
	}
	healthy := func(st admin.Status) error {
		g := st.Group
		if !g.Known || g.Degraded || g.FailureTolerance != 1 || g.HealthyVoters != 3 || g.WantedVoters != 3 {
			return fmt.Errorf("not a healthy group")
		}
		for _, v := range st.Voters {
			if v.Healthy == nil || !*v.Healthy {
				return fmt.Errorf("voter %s not known healthy", v.Name)
			}
		}
		return nil
	}
	all := []int{0, 1, 2}
	cl.WaitFor("every node to report a healthy group", settle, want(all, healthy))
	for _, i := range all {
		a := do(t, http.MethodGet, urls[i]+"/healthz?verbose")
		if a.code != http.StatusOK || !strings.HasPrefix(string(a.body), "ok\nraft group: ok: 3 of 3 voters healthy, fault tolerance 1 (judged ") {
			t.Errorf("node%d healthz?verbose: %d %q", i, a.code, a.body)
		}
	}

	victim := -1
	var rest []int
	for _, n := range cl.Running() {
		if n != leader && victim < 0 {
			victim = n.Index
		} else {
			rest = append(rest, n.Index)
		}
	}
	victimName := cl.Node(victim).Name
	cl.Isolate(victim)
	degraded := func(st admin.Status) error {
		g := st.Group
		if !g.Known || !g.Degraded || g.FailureTolerance != 0 || !slices.Contains(g.Unhealthy, victimName) {
			return fmt.Errorf("not degraded by %s", victimName)
		}
		return nil
	}
	cl.WaitFor("the leader and the other follower to report the group degraded", settle, want(rest, degraded))
	for _, i := range rest {
		a := do(t, http.MethodGet, urls[i]+"/readyz?verbose")
		if !strings.Contains(string(a.body), "raft group: degraded: 2 of 3 voters healthy (want 3), fault tolerance 0, unhealthy: "+victimName+" (judged ") {
			t.Errorf("node%d readyz?verbose: %d %q", i, a.code, a.body)
		}
	}
	cl.WaitFor("the cut node to report the judgement unknown", settle, want([]int{victim}, func(st admin.Status) error {
		if st.Group.Known || !st.Group.Degraded {
			return fmt.Errorf("still known")
		}
		return nil
	}))
	cl.Heal()
	cl.WaitFor("every node to report a healthy group again", settle, want(all, healthy))
	if g := leader.C().Health(); g.Degraded() || len(g.Voters) != 3 {
		t.Errorf("leader's Health after the heal: %+v", g)
	}
}
