package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestOperatorEndpoints: the operator actions refuse a read-only handler,
// a GET, a missing confirmation or target and an unknown field; a refusal
// by the leader is 409 with its reason; GET /v1/semaphores lists the
// semaphores in use, with [] for none.
func TestOperatorEndpoints(t *testing.T) {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 1})
	cl.WaitFormed(settle)
	c := cl.Node(0).C()
	ro := serve(t, c)
	for _, path := range []string{"/v1/drain", "/v1/undrain", "/v1/leases/release", "/v1/raft/step-down", "/v1/raft/remove-peer"} {
		expectError(t, post(t, ro.URL+path, `{"confirm":"node0"}`), http.StatusForbidden)
	}
	srv := httptest.NewServer(admin.New(c, admin.Options{Authorize: admin.LoopbackOnly}))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	expectError(t, do(t, http.MethodGet, srv.URL+"/v1/drain"), http.StatusMethodNotAllowed)
	for path, body := range map[string]string{
		"/v1/drain":            `{"confirm":"node0"}`,
		"/v1/leases/release":   `{"confirm":"node0","name":""}`,
		"/v1/raft/remove-peer": `{"confirm":"node0","node":"x","forse":true}`,
		"/v1/undrain":          `{"confirm":"node9","node":"node0"}`,
	} {
		expectError(t, post(t, srv.URL+path, body), http.StatusBadRequest)
	}
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/raft/step-down", `{"confirm":"node0"}`, "holdfast: operation refused: no other voter to take over"},
		{"/v1/leases/release", `{"confirm":"node0","name":"free"}`, `holdfast: operation refused: lease \"free\" is not held`},
		{"/v1/raft/remove-peer", `{"confirm":"node0","node":"node0"}`, "holdfast: operation refused: node0 is the raft leader"},
	} {
		a := post(t, srv.URL+tc.path, tc.body)
		expectError(t, a, http.StatusConflict)
		if !strings.Contains(string(a.body), tc.want) {
			t.Errorf("%s: %s, want %q", tc.path, a.body, tc.want)
		}
	}

	var list admin.SemaphoreList
	if a := do(t, http.MethodGet, srv.URL+"/v1/semaphores"); a.code != http.StatusOK || strings.TrimSpace(string(a.body)) != `{"semaphores":[]}` {
		t.Errorf("semaphores: %d %s", a.code, a.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	p, err := c.AcquireSemaphore(ctx, "importers", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(ctx)
	a := do(t, http.MethodGet, srv.URL+"/v1/semaphores")
	if err := json.Unmarshal(a.body, &list); err != nil || len(list.Semaphores) != 1 {
		t.Fatalf("semaphores: %s (%v)", a.body, err)
	}
	s := list.Semaphores[0]
	if s.Name != "importers" || s.Limit != 3 || s.Waiters != 0 || len(s.Holders) != 1 || s.Holders[0].Holder != "node0" ||
		s.Holders[0].Token != p.Token() || s.Holders[0].HolderID != c.ID() {
		t.Errorf("semaphore row %+v", s)
	}
}
