package coordinator_test

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestAdvertiseRefusesUnspecified refuses advertised addresses no other
// node can dial, naming the field.
func TestAdvertiseRefusesUnspecified(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ rpc, gossip, field string }{
		{rpc: "0.0.0.0:7947", field: "AdvertiseRPCAddr"},
		{rpc: "[::]:0", field: "AdvertiseRPCAddr"},
		{rpc: ":7947", field: "AdvertiseRPCAddr"},
		{gossip: "0.0.0.0:7946", field: "AdvertiseGossipAddr"},
		{gossip: "node1.example:7946", field: "AdvertiseGossipAddr"},
	} {
		cfg := coordinator.DefaultLocalConfig()
		cfg.NodeName, cfg.Cluster.BootstrapExpect = "a", 0
		cfg.AdvertiseRPCAddr, cfg.AdvertiseGossipAddr = tc.rpc, tc.gossip
		c, err := coordinator.New(cfg)
		if err == nil {
			c.Close()
		}
		if !errors.Is(err, coordinator.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("rpc %q gossip %q: New: %v, want an invalid %s", tc.rpc, tc.gossip, err, tc.field)
		}
	}
}

// TestAdvertiseAddresses runs three nodes bound to every interface: with
// no advertised address, a node advertises an interface address (and
// warns); with loopback advertised (port 0: the bound port), the cluster
// forms over it and every member, status and shard owner shows it.
func TestAdvertiseAddresses(t *testing.T) {
	t.Parallel()
	t.Run("picked", func(t *testing.T) {
		logs := &levelCapture{}
		cfg := coordinator.DefaultLocalConfig()
		cfg.NodeName, cfg.Cluster.BootstrapExpect = "a", 0
		cfg.RPCAddr, cfg.GossipAddr = "0.0.0.0:0", "0.0.0.0:0"
		cfg.Logger = slog.New(logs)
		c, err := coordinator.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, a := range []string{c.RPCAddr(), c.GossipAddr(), c.Members()[0].RPCAddr} {
			if host, port, err := net.SplitHostPort(a); err != nil || net.ParseIP(host).IsUnspecified() || port == "0" {
				t.Errorf("advertised %q: want a dialable host and the bound port", a)
			}
		}
		for field, addr := range map[string]string{"AdvertiseRPCAddr": c.RPCAddr(), "AdvertiseGossipAddr": c.GossipAddr()} {
			found := false
			for _, r := range logs.withPrefix("") {
				if r.Level != slog.LevelWarn || !strings.Contains(r.Message, field) {
					continue
				}
				found = true
				r.Attrs(func(a slog.Attr) bool {
					if a.Key == "advertise" && a.Value.String() != addr {
						// The warning used to show port 0, the bind's, before the listener had its port.
						t.Errorf("warning for %s advertises %q, want the address in use %q", field, a.Value.String(), addr)
					}
					return true
				})
			}
			if !found {
				t.Errorf("no warning naming %s", field)
			}
		}
		t.Logf("advertised rpc %s gossip %s", c.RPCAddr(), c.GossipAddr())
	})
	t.Run("configured", func(t *testing.T) {
		cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: func(_ int, c *coordinator.Config) {
			c.RPCAddr, c.GossipAddr = "0.0.0.0:0", "0.0.0.0:0"
			c.AdvertiseRPCAddr, c.AdvertiseGossipAddr = "127.0.0.1:0", "127.0.0.1:0"
		}})
		cl.WaitFormed(formTimeout)
		c := cl.Node(0).C()
		for _, m := range c.Members() {
			if !strings.HasPrefix(m.RPCAddr, "127.0.0.1:") || !strings.HasPrefix(m.GossipAddr, "127.0.0.1:") {
				t.Errorf("member %s: rpc %s gossip %s, want the advertised loopback addresses", m.Name, m.RPCAddr, m.GossipAddr)
			}
		}
		cl.WaitFor("shard 0 owned", formTimeout, func() error {
			o, ok := c.Owner(0)
			if !ok {
				return holdfasttest.ErrNotYet
			}
			if !strings.HasPrefix(o.Addr, "127.0.0.1:") {
				t.Fatalf("owner address %q, want the advertised one", o.Addr)
			}
			return nil
		})
	})
	t.Run("loopback to another host", func(t *testing.T) {
		logs := &levelCapture{}
		cfg := coordinator.DefaultLocalConfig()
		cfg.NodeName, cfg.Cluster.BootstrapExpect = "a", 0
		cfg.Join = []string{"192.0.2.1:7946"} // TEST-NET-1: another host, never answers
		cfg.Logger = slog.New(logs)
		c, err := coordinator.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		recs := logs.withPrefix("advertising a loopback address while joining another host")
		if len(recs) != 2 || recs[0].Level != slog.LevelWarn || !strings.Contains(recs[0].Message, "AdvertiseRPCAddr") {
			t.Errorf("%d loopback warnings, want one for RPC and one for gossip naming the field", len(recs))
		}
	})
}
