package transport

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// TestCallForeignCluster checks that a call carries the caller's cluster
// ID and is refused with CodeForeignCluster by a node of another cluster,
// except for the methods of AnyCluster; that either side not knowing its
// cluster is served; and that the refusal is counted.
func TestCallForeignCluster(t *testing.T) {
	var srvCluster, cliCluster atomic.Pointer[string]
	set := func(p *atomic.Pointer[string], v string) { p.Store(&v) }
	set(&srvCluster, "A")
	set(&cliCluster, "B")
	srv := newTestTransport(t, "srv", echo, func(c *Config) {
		c.Cluster = func() string { return *srvCluster.Load() }
		c.AnyCluster = []string{"echo"}
	})
	cli := newTestTransport(t, "cli", nil, func(c *Config) { c.Cluster = func() string { return *cliCluster.Load() } })
	ctx := context.Background()
	call := func(method string) error {
		var got pingReq
		return cli.Call(ctx, srv.Addr(), method, pingReq{Seq: 1}, &got)
	}
	var re *RemoteError
	if err := call("fail"); !errors.As(err, &re) || re.Code != CodeForeignCluster {
		t.Fatalf("a call from cluster B to A: %v", err)
	}
	if srv.Stats().ForeignCluster != 1 {
		t.Fatalf("stats %+v", srv.Stats())
	}
	if err := call("echo"); err != nil {
		t.Fatalf("a method of AnyCluster: %v", err)
	}
	for _, tc := range []struct{ srv, cli string }{{"A", "A"}, {"", "B"}, {"A", ""}} {
		set(&srvCluster, tc.srv)
		set(&cliCluster, tc.cli)
		if err := call("fail"); !errors.As(err, &re) || re.Code != "not_leader" {
			t.Fatalf("server cluster %q, caller %q: %v", tc.srv, tc.cli, err)
		}
	}
	if srv.Stats().ForeignCluster != 1 {
		t.Fatalf("stats %+v", srv.Stats())
	}
}
