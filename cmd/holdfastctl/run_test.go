package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// Generous: the suite runs on loaded 2-core machines next to other suites.
const settle = 90 * time.Second

// ctl runs holdfastctl with args and returns its exit status and output.
func ctl(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustCtl runs holdfastctl and fails the test unless it exits 0.
func mustCtl(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := ctl(args...)
	if code != 0 || errOut != "" {
		t.Fatalf("holdfastctl %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
	}
	return out
}

// decodeStrict decodes JSON output into v, refusing fields the admin types
// do not have.
func decodeStrict(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %T from %q: %v", v, out, err)
	}
	if !strings.Contains(out, "\n  ") {
		t.Errorf("JSON output is not indented: %q", out)
	}
}

// settledCluster starts 3 nodes with 16 shards and waits until node0 sees
// them all as voters, is ready and sees every shard owned; node1 holds the
// lease "cli-lease".
func settledCluster(t *testing.T) (*holdfasttest.Cluster, *coordinator.Lease) {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: func(i int, c *coordinator.Config) {
		c.Shards.Count = 16
		if i == 2 {
			c.Shards.Tags = []string{"ssd", "role=batch"}
		}
	}})
	cl.WaitFormed(settle)
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	l, err := cl.Node(1).C().Acquire(ctx, "cli-lease", coordinator.WithValue("node1 at :8080"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release(context.Background()) })
	c := cl.Node(0).C()
	cl.WaitFor("node0 to see the cluster settled", settle, func() error {
		if err := c.Ready(); err != nil {
			return err
		}
		if v, _, err := cl.Suffrages(); err != nil || v != 3 || len(c.Voters()) != 3 {
			return fmt.Errorf("%w: voters %v", holdfasttest.ErrNotYet, c.Voters())
		}
		if err := balanced(c.Table()); err != nil {
			return err
		}
		if h, ok := c.Holder("cli-lease"); !ok || h.Node.Name != "node1" {
			return fmt.Errorf("%w: node0 does not see the lease", holdfasttest.ErrNotYet)
		}
		return nil
	})
	return cl, l
}

// balanced reports nil once t has 16 shards, all owned and none being
// handed off, spread over 3 nodes within the planner's bounds (5 to 6
// each, see shardown.Params.Epsilon): the sticky planner then has no reason
// to move any, so the table the tests read several times should stay put
// (the checks still accept a handoff, which a session lost under load can
// start).
func balanced(t *coordinator.ShardTable) error {
	if t.Len() != 16 {
		return fmt.Errorf("%w: %d shards", holdfasttest.ErrNotYet, t.Len())
	}
	per := map[string]int{}
	for s := range t.Len() {
		sh, ok := t.Shard(coordinator.ShardID(s))
		o := sh.Owner
		if !ok || sh.State != coordinator.ShardOwned {
			return fmt.Errorf("%w: shard %d free or being handed off", holdfasttest.ErrNotYet, s)
		}
		per[o.Node.Name]++
	}
	for _, n := range []string{"node0", "node1", "node2"} {
		if per[n] < 5 || per[n] > 6 {
			return fmt.Errorf("%w: shards per node %v", holdfasttest.ErrNotYet, per)
		}
	}
	return nil
}

func TestCommands(t *testing.T) {
	cl, lease := settledCluster(t)
	c := cl.Node(0).C()
	srv := httptest.NewServer(admin.Handler(c))
	defer srv.Close()
	addr := srv.Listener.Addr().String()

	t.Run("status", func(t *testing.T) {
		cl.WaitFor("the leader's health judgement on node0, all voters healthy", 60*time.Second, func() error {
			if g := c.Health(); g.Degraded() {
				return fmt.Errorf("%w: %+v", holdfasttest.ErrNotYet, g)
			}
			return nil
		})
		out := mustCtl(t, "-addr", addr, "status")
		for _, want := range []string{"name:", "node0", c.ID(), c.ClusterID(), "node0, node1, node2", "ready:", "yes",
			"fault_tolerance:", "1 (3 of 3 voters healthy, judged ", "formation:", "member of cluster " + c.ClusterID()} {
			if !strings.Contains(out, want) {
				t.Errorf("status lacks %q:\n%s", want, out)
			}
		}
		var st admin.Status
		decodeStrict(t, mustCtl(t, "-addr", addr, "-json", "status"), &st)
		if st.Name != "node0" || st.ID != c.ID() || len(st.Voters) != 3 || !st.Ready || st.Leader == nil || !st.Formation.Formed {
			t.Errorf("status -json: %+v", st)
		}
		if g := st.Group; !g.Known || g.Degraded || g.FailureTolerance != 1 || g.HealthyVoters != 3 {
			t.Errorf("status -json group: %+v", g)
		}
	})
	t.Run("members", func(t *testing.T) {
		out := mustCtl(t, "-addr", addr, "members")
		for i := range 3 {
			n := cl.Node(i).C()
			tags := map[bool]string{true: "ssd,role=batch", false: "-"}[i == 2]
			row := regexp.MustCompile(fmt.Sprintf(`(?m)^node%d +%s +alive +voter +true +- +%s +%s +\S+ +%s$`,
				i, n.ID(), regexp.QuoteMeta(n.RPCAddr()), regexp.QuoteMeta(n.GossipAddr()), regexp.QuoteMeta(tags)))
			if !row.MatchString(out) {
				t.Errorf("members lacks the row of node%d:\n%s", i, out)
			}
		}
		var ms []admin.MemberRow
		decodeStrict(t, mustCtl(t, "members", "-json", "-addr", addr), &ms) // flags after the command
		if len(ms) != 3 || ms[2].Name != "node2" || ms[2].ID != cl.Node(2).C().ID() || strings.Join(ms[2].Tags, ",") != "ssd,role=batch" {
			t.Errorf("members -json: %+v", ms)
		}
	})
	t.Run("shards", func(t *testing.T) { checkShards(t, addr) })
	t.Run("leases", func(t *testing.T) {
		out := mustCtl(t, "-addr", addr, "leases")
		row := fmt.Sprintf(`(?m)^cli-lease +node1 +%s +\S+ +%d +0 +"node1 at :8080"$`, cl.Node(1).C().ID(), lease.Token())
		if !regexp.MustCompile(row).MatchString(out) || !strings.HasPrefix(out, "NAME ") {
			t.Errorf("leases lacks %s:\n%s", row, out)
		}
		var ll admin.LeaseList
		decodeStrict(t, mustCtl(t, "-addr", addr, "-json", "leases"), &ll)
		if len(ll.Leases) != 1 || ll.Leases[0].Name != "cli-lease" || ll.Leases[0].Token != lease.Token() || ll.Leases[0].Value != "node1 at :8080" {
			t.Errorf("leases -json: %+v", ll)
		}
	})
	t.Run("url", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("/admin/", http.StripPrefix("/admin", admin.Handler(cl.Node(2).C())))
		msrv := httptest.NewServer(mux)
		defer msrv.Close()
		if out := mustCtl(t, "-addr", msrv.URL+"/admin/", "status"); !strings.Contains(out, "node2") {
			t.Errorf("status through %s/admin/:\n%s", msrv.URL, out)
		}
		if out := mustCtl(t, "-addr", srv.URL, "status"); !strings.Contains(out, "node0") {
			t.Errorf("status through %s:\n%s", srv.URL, out)
		}
		code, _, errOut := ctl("-addr", msrv.URL, "status") // the handler is under /admin
		if code != 1 || !strings.Contains(errOut, "404") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("status without the prefix: exit %d, stderr %q", code, errOut)
		}
	})
}

// checkShards checks the shards table, -owner and -json.
func checkShards(t *testing.T, addr string) {
	owners := map[string]bool{"node0": true, "node1": true, "node2": true}
	out := mustCtl(t, "-addr", addr, "shards")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 18 || !regexp.MustCompile(`^version \d+: 16 shards, 16 owned$`).MatchString(lines[0]) ||
		!strings.HasPrefix(lines[1], "SHARD ") {
		t.Fatalf("shards table:\n%s", out)
	}
	row := regexp.MustCompile(`^(\d+) +(?:owned|revoking) +(node\d) +\S+ +\S+ +[1-9]\d*$`)
	for i, line := range lines[2:] {
		m := row.FindStringSubmatch(line)
		if m == nil || m[1] != fmt.Sprint(i) || !owners[m[2]] {
			t.Errorf("shard row %d: %q", i, line)
		}
	}
	var sl admin.ShardList
	decodeStrict(t, mustCtl(t, "-addr", addr, "-json", "shards"), &sl)
	if sl.Count != 16 || len(sl.Shards) != 16 || sl.Version == 0 {
		t.Errorf("shards -json: %+v", sl)
	}
	for i, r := range sl.Shards {
		if r.Shard != uint32(i) || !owners[r.Owner] || r.Token == 0 {
			t.Errorf("shards -json row %d: %+v", i, r)
		}
	}
	decodeStrict(t, mustCtl(t, "-addr", addr, "-json", "-owner", "node1", "shards"), &sl)
	for _, r := range sl.Shards {
		if r.Owner != "node1" {
			t.Errorf("shards -owner node1 lists %+v", r)
		}
	}
	out = mustCtl(t, "-addr", addr, "-owner", "nobody", "shards")
	if !regexp.MustCompile(`^version \d+: 16 shards, 0 owned by nobody\n$`).MatchString(out) {
		t.Errorf("shards -owner nobody:\n%s", out)
	}
}

// closedAddr returns a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestUnreachable(t *testing.T) {
	addr := closedAddr(t)
	for _, cmd := range []string{"status", "members", "shards", "leases"} {
		code, out, errOut := ctl("-addr", addr, cmd)
		want := "holdfastctl: cannot reach " + addr + ": connection refused\n"
		if code != 1 || out != "" || errOut != want {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1, stderr %q", cmd, code, out, errOut, want)
		}
	}
}

func TestErrorAnswers(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/status":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error":"it broke"}`))
		case "/v1/shards":
			w.Write([]byte("<html>not the admin handler</html>"))
		case "/v1/leases": // never answers in time
			select {
			case <-r.Context().Done():
			case <-block:
			}
		}
	}))
	defer srv.Close()
	defer close(block)
	addr := srv.Listener.Addr().String()
	for _, tc := range []struct{ args, want string }{
		{"status", "holdfastctl: " + addr + " answered 500 Internal Server Error to /v1/status: it broke\n"},
		{"shards", "holdfastctl: " + addr + " answered /v1/shards with Content-Type \"text/html; charset=utf-8\", not JSON"},
		{"-timeout 300ms leases", "holdfastctl: cannot reach " + addr + ": no answer within 300ms\n"},
	} {
		code, out, errOut := ctl(append([]string{"-addr", addr}, strings.Fields(tc.args)...)...)
		if code != 1 || out != "" || !strings.HasPrefix(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1, stderr %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestStaleShards prints a shard table whose node knows no leader with a
// STALE line saying since when.
func TestStaleShards(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"version":7,"count":1,"stale":true,"no_leader_since":"2026-01-02T03:04:05Z",` +
			`"shards":[{"shard":0,"state":"owned","owner":"n2","owner_id":"id2","addr":"a:1","token":3}]}`))
	}))
	defer srv.Close()
	out := mustCtl(t, "-addr", srv.Listener.Addr().String(), "shards")
	if !strings.HasPrefix(out, "STALE: no raft leader known since 2026-01-02T03:04:05Z (") || !strings.Contains(out, "version 7: 1 shards, 1 owned") {
		t.Errorf("shards of a node without a leader:\n%s", out)
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"", "missing command"},
		{"bogus", `unknown command "bogus"`},
		{"-nope status", "flag provided but not defined: -nope"},
		{"status -nope", "flag provided but not defined: -nope"},
		{"status extra", `unexpected argument "extra"`},
		{"-timeout x status", "invalid value"},
		{"-timeout 0s status", "-timeout is 0s"},
		{"-owner node0 leases", "-owner applies to shards only"},
		{"-addr nohostport status", "no port"},
		{"-addr ftp://h:1 status", "scheme ftp"},
		{"-addr http:// status", "no host"},
		{"leave", "leave changes the cluster: give -confirm NAME"},
		{"-confirm node0 status", "-confirm applies to acting commands"},
		{"-force status", "-force applies to leave and raft remove-peer only"},
		{"-confirm node0 leave extra", `unexpected argument "extra"`},
		{"-confirm node0 drain", "drain needs NODE"},
		{"-confirm node0 drain a b", `unexpected argument "b" after drain`},
		{"drain node1", "drain changes the cluster: give -confirm NAME"},
		{"lease", "lease needs a subcommand: release"},
		{"raft", "raft needs a subcommand: step-down|remove-peer"},
		{"-confirm node0 raft elect", `unknown command "raft elect"`},
		{"-force -confirm node0 drain node1", "-force applies to leave and raft remove-peer only"},
		{"semaphores extra", `unexpected argument "extra" after semaphores`},
	} {
		code, out, errOut := ctl(strings.Fields(tc.args)...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "holdfastctl: ") || !strings.Contains(errOut, tc.want) ||
			!strings.Contains(errOut, "usage: holdfastctl") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q with the usage", tc.args, code, out, errOut, tc.want)
		}
	}
	for _, args := range []string{"-h", "-help", "help", "status -h"} {
		code, out, errOut := ctl(strings.Fields(args)...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: holdfastctl") || !strings.Contains(out, "-addr address") ||
			!strings.Contains(out, defaultAddr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}
