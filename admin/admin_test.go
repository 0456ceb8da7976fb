package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// Generous: the suite runs on loaded 2-core machines next to other suites.
const settle = 90 * time.Second

// answer is one HTTP response, read in full.
type answer struct {
	code   int
	header http.Header
	body   []byte
}

// do sends one request to url and reads the whole answer.
func do(t *testing.T, method, url string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return answer{code: resp.StatusCode, header: resp.Header, body: body}
}

// getJSON GETs url, expects 200 with a JSON body, and decodes it into v.
func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("GET %s: Content-Type %q", url, ct)
	}
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields() // the schema types describe every field
	return dec.Decode(v)
}

// serve starts an HTTP server on loopback for c's admin handler.
func serve(t *testing.T, c *coordinator.Coordinator) *httptest.Server {
	srv := httptest.NewServer(admin.Handler(c))
	t.Cleanup(func() {
		srv.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	return srv
}

func startCluster(t *testing.T) *holdfasttest.Cluster {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: func(_ int, c *coordinator.Config) {
		c.Shards.Count = 16
	}})
	cl.WaitFormed(settle)
	return cl
}

func TestClusterEndpoints(t *testing.T) {
	cl := startCluster(t)
	srv := serve(t, cl.Node(0).C())
	t.Run("status", func(t *testing.T) { checkStatus(t, cl, srv.URL) })
	t.Run("shards", func(t *testing.T) { checkShards(t, cl, srv.URL) })
	t.Run("leases", func(t *testing.T) { checkLeases(t, cl, srv.URL) })
	t.Run("probes", func(t *testing.T) {
		cl.WaitFor("node0 ready", settle, func() error { return cl.Node(0).C().Ready() })
		expectText(t, do(t, http.MethodGet, srv.URL+"/readyz"), http.StatusOK, "ready\n")
		expectText(t, do(t, http.MethodGet, srv.URL+"/healthz"), http.StatusOK, "ok\n")
	})
	t.Run("methods", func(t *testing.T) { checkMethods(t, srv.URL) })
	t.Run("placement", func(t *testing.T) { checkPlacement(t, cl) })
	t.Run("mounted", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("/admin/", http.StripPrefix("/admin", admin.Handler(cl.Node(1).C())))
		msrv := httptest.NewServer(mux)
		defer msrv.Close()
		var st admin.Status
		if err := getJSON(msrv.URL+"/admin/v1/status", &st); err != nil {
			t.Fatal(err)
		}
		if st.Name != "node1" {
			t.Fatalf("status under /admin names %q, want node1", st.Name)
		}
	})
}

// checkStatus waits for node0's status to show the settled cluster, then
// checks every field against the coordinators.
func checkStatus(t *testing.T, cl *holdfasttest.Cluster, url string) {
	var st admin.Status
	cl.WaitFor("a complete status", settle, func() error {
		st = admin.Status{}
		if err := getJSON(url+"/v1/status", &st); err != nil {
			return err
		}
		return settled(st)
	})
	c := cl.Node(0).C()
	var leader *coordinator.Coordinator // as node0 named it: leadership may have moved since
	for _, n := range cl.Nodes() {
		if n.C().ID() == st.Leader.ID {
			leader = n.C()
		}
	}
	switch {
	case leader == nil:
		t.Fatalf("leader %+v is none of the nodes", *st.Leader)
	case st.Name != "node0" || st.ID != c.ID():
		t.Errorf("status names %s/%s, want node0/%s", st.Name, st.ID, c.ID())
	case st.ClusterID == "" || st.ClusterID != c.ClusterID():
		t.Errorf("cluster_id %q, want %q", st.ClusterID, c.ClusterID())
	case st.RPCAddr != c.RPCAddr() || st.GossipAddr != c.GossipAddr():
		t.Errorf("addresses %s %s, want %s %s", st.RPCAddr, st.GossipAddr, c.RPCAddr(), c.GossipAddr())
	case st.RaftState != "leader" && st.RaftState != "follower":
		t.Errorf("raft_state %q", st.RaftState)
	case st.Leader.Name != leader.NodeName() || st.Leader.RPCAddr != leader.RPCAddr():
		t.Errorf("leader %+v, want %s at %s", *st.Leader, leader.NodeName(), leader.RPCAddr())
	case st.AppliedIndex == 0 || st.Shards != 16:
		t.Errorf("applied_index %d, shards %d", st.AppliedIndex, st.Shards)
	case st.Session.ID == "" || st.Session.RemainingSeconds <= 0:
		t.Errorf("session %+v", *st.Session)
	case st.NotReadyReason != "":
		t.Errorf("ready with not_ready_reason %q", st.NotReadyReason)
	}
	for i, v := range st.Voters {
		if want := fmt.Sprintf("node%d", i); v.Name != want || v.ID != cl.Node(i).C().ID() {
			t.Errorf("voter %d is %+v, want %s/%s", i, v, want, cl.Node(i).C().ID())
		}
	}
	for i, m := range st.Members {
		n := cl.Node(i).C()
		if m.Name != n.NodeName() || m.ID != n.ID() || m.RPCAddr != n.RPCAddr() || m.GossipAddr != n.GossipAddr() ||
			!m.Eligible || m.ClusterID != st.ClusterID || m.Since.IsZero() {
			t.Errorf("member %d is %+v, want %s/%s at %s, %s", i, m, n.NodeName(), n.ID(), n.RPCAddr(), n.GossipAddr())
		}
	}
}

// settled reports what st still lacks of a formed, settled 3-node cluster.
func settled(st admin.Status) error {
	switch {
	case st.Leader == nil:
		return fmt.Errorf("%w: no leader", holdfasttest.ErrNotYet)
	case len(st.Voters) != 3:
		return fmt.Errorf("%w: voters %+v", holdfasttest.ErrNotYet, st.Voters)
	case len(st.Members) != 3:
		return fmt.Errorf("%w: members %+v", holdfasttest.ErrNotYet, st.Members)
	case st.Session == nil || !st.Ready:
		return fmt.Errorf("%w: not ready: %s", holdfasttest.ErrNotYet, st.NotReadyReason)
	}
	for _, m := range st.Members {
		if m.State != "alive" || m.Suffrage != "voter" || m.ClusterID != st.ClusterID {
			return fmt.Errorf("%w: member %s is %s, %s, in cluster %q", holdfasttest.ErrNotYet, m.Name, m.State, m.Suffrage, m.ClusterID)
		}
	}
	return nil
}

// checkShards waits until every shard is owned, then checks the rows and
// the owner filter.
func checkShards(t *testing.T, cl *holdfasttest.Cluster, url string) {
	ids := map[string]string{}
	for _, n := range cl.Nodes() {
		ids[n.Name] = n.C().ID()
	}
	var list admin.ShardList
	cl.WaitFor("every shard owned", settle, func() error {
		list = admin.ShardList{}
		if err := getJSON(url+"/v1/shards", &list); err != nil {
			return err
		}
		if len(list.Shards) != 16 {
			return fmt.Errorf("%w: %d rows", holdfasttest.ErrNotYet, len(list.Shards))
		}
		for _, r := range list.Shards {
			if r.State != "owned" {
				return fmt.Errorf("%w: shard %d is %s", holdfasttest.ErrNotYet, r.Shard, r.State)
			}
		}
		return nil
	})
	if list.Version == 0 || list.Count != 16 || list.Stale || list.NoLeaderSince != nil {
		t.Errorf("version %d, count %d, stale %v since %v", list.Version, list.Count, list.Stale, list.NoLeaderSince)
	}
	for i, r := range list.Shards {
		if r.Shard != uint32(i) || ids[r.Owner] == "" || r.OwnerID != ids[r.Owner] || r.Addr == "" || r.Token == 0 {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	var mine admin.ShardList
	if err := getJSON(url+"/v1/shards?owner=node0", &mine); err != nil {
		t.Fatal(err)
	}
	for _, r := range mine.Shards {
		if r.Owner != "node0" {
			t.Errorf("?owner=node0 lists %+v", r)
		}
	}
	var none admin.ShardList
	if err := getJSON(url+"/v1/shards?owner=nobody", &none); err != nil {
		t.Fatal(err)
	}
	if none.Count != 16 || none.Shards == nil || len(none.Shards) != 0 {
		t.Errorf("?owner=nobody: count %d, rows %v", none.Count, none.Shards)
	}
	var free admin.ShardList
	if err := getJSON(url+"/v1/shards?owner=", &free); err != nil {
		t.Fatal(err)
	}
	for _, r := range free.Shards {
		if r.State != "free" || r.Owner != "" {
			t.Errorf("?owner= lists %+v", r)
		}
	}
	expectError(t, do(t, http.MethodGet, url+"/v1/shards?owner=a&owner=b"), http.StatusBadRequest)
}

// checkLeases has node1 take a lease and waits for node0 to list it.
func checkLeases(t *testing.T, cl *holdfasttest.Cluster, url string) {
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	n1 := cl.Node(1).C()
	l, err := n1.Acquire(ctx, "x", coordinator.WithValue("node1 serves at :8080"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	var list admin.LeaseList
	cl.WaitFor("node0 to list lease x", settle, func() error {
		list = admin.LeaseList{}
		if err := getJSON(url+"/v1/leases", &list); err != nil {
			return err
		}
		if len(list.Leases) != 1 {
			return fmt.Errorf("%w: leases %+v", holdfasttest.ErrNotYet, list.Leases)
		}
		return nil
	})
	got := list.Leases[0]
	want := admin.LeaseRow{Name: "x", Holder: "node1", HolderID: n1.ID(), Session: got.Session, Token: l.Token(),
		Value: "node1 serves at :8080"}
	if got != want || got.Session == "" {
		t.Errorf("lease row %+v, want %+v", got, want)
	}
}

// checkMethods checks the 405, 404 and HEAD answers.
func checkMethods(t *testing.T, url string) {
	for _, p := range []string{"/v1/status", "/v1/shards", "/v1/leases", "/healthz", "/readyz"} {
		a := do(t, http.MethodPost, url+p)
		expectError(t, a, http.StatusMethodNotAllowed)
		if allow := a.header.Get("Allow"); allow != "GET, HEAD" {
			t.Errorf("POST %s: Allow %q", p, allow)
		}
	}
	expectError(t, do(t, http.MethodDelete, url+"/v1/status"), http.StatusMethodNotAllowed)
	for _, p := range []string{"/", "/v1", "/v1/status/", "/v2/status", "/metrics"} {
		expectError(t, do(t, http.MethodGet, url+p), http.StatusNotFound)
	}
	a := do(t, http.MethodHead, url+"/v1/status")
	if a.code != http.StatusOK || len(a.body) != 0 || a.header.Get("Content-Type") != "application/json" {
		t.Errorf("HEAD /v1/status: %d %q %q", a.code, a.header.Get("Content-Type"), a.body)
	}
}

// expectError checks that a is a JSON Error with the given code.
func expectError(t *testing.T, a answer, code int) {
	t.Helper()
	var e admin.Error
	if a.code != code || a.header.Get("Content-Type") != "application/json" {
		t.Errorf("got %d %q, want %d application/json", a.code, a.header.Get("Content-Type"), code)
	} else if err := json.Unmarshal(a.body, &e); err != nil || e.Error == "" {
		t.Errorf("error body %q: %v", a.body, err)
	}
}

// expectText checks a plain-text probe answer.
func expectText(t *testing.T, a answer, code int, body string) {
	t.Helper()
	if a.code != code || string(a.body) != body || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
		t.Errorf("got %d %q %q, want %d %q text/plain", a.code, a.header.Get("Content-Type"), a.body, code, body)
	}
}

// TestUnformedNode serves a node that can never form a cluster (no
// BootstrapExpect, nobody to join), then shuts it down.
func TestUnformedNode(t *testing.T) {
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName = "alone"
	cfg.DataDir = t.TempDir()
	cfg.Cluster.BootstrapExpect = 0
	c, err := coordinator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	srv := serve(t, c)

	a := do(t, http.MethodGet, srv.URL+"/readyz")
	if a.code != http.StatusServiceUnavailable || !strings.Contains(string(a.body), "not a member of a formed cluster") {
		t.Errorf("readyz: %d %q", a.code, a.body)
	}
	expectText(t, do(t, http.MethodGet, srv.URL+"/healthz"), http.StatusOK, "ok\n")
	expectText(t, do(t, http.MethodGet, srv.URL+"/healthz?verbose"), http.StatusOK,
		"ok\nraft group: unknown: no raft leader known\nraft storage: ok\n")
	a = do(t, http.MethodGet, srv.URL+"/v1/status")
	for _, want := range []string{`"leader":null`, `"session":null`, `"voters":[]`, `"cluster_id":""`, `"ready":false`,
		`"storage":{"ok":true,"op":"","error":"","since":null,"restart_needed":false,"errors":0,"line":"ok"}`} {
		if !strings.Contains(string(a.body), want) {
			t.Errorf("status lacks %s: %s", want, a.body)
		}
	}
	var st admin.Status
	if err := json.Unmarshal(a.body, &st); err != nil || st.Name != "alone" || st.NotReadyReason == "" || len(st.Members) != 1 {
		t.Errorf("status %+v: %v", st, err)
	}
	if f := st.Formation; f.Formed || f.Expect != 0 || !strings.HasPrefix(f.Progress, "waiting to join a cluster") ||
		!strings.Contains(st.NotReadyReason, f.Progress) {
		t.Errorf("formation %+v, not ready because %q: want the reason to say why", f, st.NotReadyReason)
	}
	a = do(t, http.MethodGet, srv.URL+"/v1/shards")
	var list admin.ShardList
	if err := json.Unmarshal(a.body, &list); a.code != http.StatusOK || err != nil || list.Version != 0 || list.Count != 0 ||
		len(list.Shards) != 0 || !list.Stale || list.NoLeaderSince == nil || list.NoLeaderSince.After(time.Now()) {
		t.Errorf("shards: %d %s: want an empty table marked stale since the start", a.code, a.body)
	}
	a = do(t, http.MethodGet, srv.URL+"/v1/leases")
	if a.code != http.StatusOK || strings.TrimSpace(string(a.body)) != `{"leases":[]}` {
		t.Errorf("leases: %d %s", a.code, a.body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	if err := c.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	expectText(t, do(t, http.MethodGet, srv.URL+"/healthz"), http.StatusServiceUnavailable, "shut down\n")
	a = do(t, http.MethodGet, srv.URL+"/readyz")
	if a.code != http.StatusServiceUnavailable || !strings.Contains(string(a.body), "shut down") {
		t.Errorf("readyz after Shutdown: %d %q", a.code, a.body)
	}
	if err := getJSON(srv.URL+"/v1/status", &st); err != nil || st.RaftState != "shutdown" || st.Ready {
		t.Errorf("status after Shutdown: %+v: %v", st, err)
	}
}

func TestNilCoordinatorPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Handler(nil) did not panic")
		}
	}()
	admin.Handler(nil)
}
