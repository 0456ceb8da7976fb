package admin_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// post sends body to url with POST and reads the whole answer.
func post(t *testing.T, url, body string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{code: resp.StatusCode, header: resp.Header, body: b}
}

// TestLeaveAction: POST /v1/leave is refused by the read-only Handler, by
// an Authorize that refuses, for a GET, a bad body, an unknown field and a
// confirmation naming another node, each without touching the node; with
// three voters and no spare the leave is refused (409) and the node keeps
// running; forced, it leaves (200) and the node stops.
func TestLeaveAction(t *testing.T) {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	cl.WaitFormed(settle)
	c := cl.Node(1).C()
	// Formed is not ready: node1's first session may still be on its way,
	// and the check below is that the refused leaves leave it ready.
	ready, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	if err := c.WaitReady(ready); err != nil {
		t.Fatal(err)
	}
	ro := serve(t, c)
	expectError(t, post(t, ro.URL+"/v1/leave", `{"confirm":"node1"}`), http.StatusForbidden)
	refuse := httptest.NewServer(admin.New(c, admin.Options{Authorize: func(*http.Request) error { return errors.New("no") }}))
	defer refuse.Close()
	a := post(t, refuse.URL+"/v1/leave", `{"confirm":"node1"}`)
	expectError(t, a, http.StatusForbidden)
	if !strings.Contains(string(a.body), "not authorised: no") {
		t.Errorf("refusal body %s", a.body)
	}
	srv := httptest.NewServer(admin.New(c, admin.Options{Authorize: admin.LoopbackOnly}))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	a = do(t, http.MethodGet, srv.URL+"/v1/leave")
	expectError(t, a, http.StatusMethodNotAllowed)
	if allow := a.header.Get("Allow"); allow != "POST" {
		t.Errorf("GET /v1/leave: Allow %q", allow)
	}
	for _, body := range []string{`{`, `{"confirm":"node1","forse":true}`, `{"confirm":"node0"}`, `{}`} {
		expectError(t, post(t, srv.URL+"/v1/leave", body), http.StatusBadRequest)
	}
	a = post(t, srv.URL+"/v1/leave", `{"confirm":"node1"}`)
	expectError(t, a, http.StatusConflict)
	if !strings.Contains(string(a.body), "leave refused") {
		t.Errorf("refused leave: %s", a.body)
	}
	if err := c.Ready(); err != nil {
		t.Fatalf("the node is not ready after its refused leaves: %v", err)
	}
	a = post(t, srv.URL+"/v1/leave", `{"confirm":"node1","force":true}`)
	var res admin.LeaveResult
	if a.code != http.StatusOK || json.Unmarshal(a.body, &res) != nil || !res.Left || res.Name != "node1" || res.ID != c.ID() {
		t.Fatalf("forced leave: %d %s", a.code, a.body)
	}
	select {
	case <-c.Done():
	case <-time.After(settle):
		t.Fatal("the node did not stop after leaving")
	}
	cl.Kill(1)
	next := cl.WaitLeader(settle)
	if v := next.C().Voters(); len(v) != 2 {
		t.Errorf("voters after the leave: %v", v)
	}
	expectError(t, post(t, srv.URL+"/v1/leave", `{"confirm":"node1"}`), http.StatusServiceUnavailable)
}

// TestAuthorizers: RequireClientCertificate wants a TLS connection with a
// verified client certificate; LoopbackOnly a loopback remote address.
func TestAuthorizers(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/v1/leave", bytes.NewReader(nil))
	if err := admin.RequireClientCertificate(r); err == nil {
		t.Error("plain HTTP authorised")
	}
	r.TLS = &tls.ConnectionState{}
	if err := admin.RequireClientCertificate(r); err == nil {
		t.Error("TLS without a client certificate authorised")
	}
	r.TLS.VerifiedChains = [][]*x509.Certificate{{{}}}
	if err := admin.RequireClientCertificate(r); err != nil {
		t.Errorf("verified client certificate refused: %v", err)
	}
	for addr, ok := range map[string]bool{"127.0.0.1:5000": true, "[::1]:5000": true, "10.0.0.7:5000": false, "junk": false} {
		r.RemoteAddr = addr
		if err := admin.LoopbackOnly(r); (err == nil) != ok {
			t.Errorf("LoopbackOnly(%s) = %v", addr, err)
		}
	}
}
