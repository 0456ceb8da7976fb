package coordinator_test

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	base := func() coordinator.Config {
		c := coordinator.DefaultLocalConfig()
		c.NodeName = "n"
		c.DataDir = t.TempDir()
		return c
	}
	for _, tc := range []struct {
		field string
		edit  func(*coordinator.Config)
	}{
		{"NodeName", func(c *coordinator.Config) { c.NodeName = "" }},
		{"GossipAddr", func(c *coordinator.Config) { c.GossipAddr = "" }},
		{"RPCAddr", func(c *coordinator.Config) { c.RPCAddr = "" }},
		{"Cluster.Voters", func(c *coordinator.Config) { c.Cluster.Voters = 2 }},
		{"Cluster.Voters", func(c *coordinator.Config) { c.Cluster.Voters = 0 }},
		{"Cluster.BootstrapExpect", func(c *coordinator.Config) { c.Cluster.BootstrapExpect = 5 }},
		{"Cluster.BootstrapExpect", func(c *coordinator.Config) { c.DataDir = "" }},
		{"Shards.Count", func(c *coordinator.Config) { c.Shards.Count = 0 }},
		{"Shards.Count", func(c *coordinator.Config) { c.Shards.Count = -3 }},
		{"Session.TTL", func(c *coordinator.Config) { c.Session.TTL = 100 * time.Millisecond }},
		{"Raft.LeaderLeaseTimeout", func(c *coordinator.Config) { c.Raft.LeaderLeaseTimeout = time.Hour }},
		{"Raft.HeartbeatTimeout", func(c *coordinator.Config) { c.Raft.HeartbeatTimeout = 0 }},
		{"Cluster.ServerStabilization", func(c *coordinator.Config) { c.Cluster.ServerStabilization = 0 }},
		{"RPCTimeout", func(c *coordinator.Config) { c.RPCTimeout = 0; c.Cluster.BootstrapPromiseTTL = time.Hour }},
		{"Session.LeaseMargin", func(c *coordinator.Config) { c.Session.LeaseMargin = c.Session.TTL }},
		{"Session.ExpiryGrace", func(c *coordinator.Config) { c.Session.ExpiryGrace = 0 }},
		{"Shards.Epsilon", func(c *coordinator.Config) { c.Shards.Epsilon = 1 }},
		{"Shards.DrainTimeout", func(c *coordinator.Config) { c.Shards.DrainTimeout = 0 }},
		{"Raft.SnapshotThreshold", func(c *coordinator.Config) { c.Raft.SnapshotThreshold = 0 }},
		{"Gossip.Keys[0]", func(c *coordinator.Config) { c.Gossip.Keys = [][]byte{make([]byte, 5)} }},
	} {
		c := base()
		tc.edit(&c)
		_, err := coordinator.New(c)
		if !errors.Is(err, coordinator.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want an ErrInvalidConfig naming the field", tc.field, err)
		}
	}
}

func TestDataDirInUse(t *testing.T) {
	t.Parallel()
	c := coordinator.DefaultLocalConfig()
	c.NodeName, c.DataDir, c.Cluster.BootstrapExpect, c.Cluster.Voters = "a", t.TempDir(), 1, 1
	first, err := coordinator.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	c.NodeName = "b"
	if second, err := coordinator.New(c); err == nil {
		second.Close()
		t.Fatal("two nodes opened one data dir")
	} else if !strings.Contains(err.Error(), "DataDir") {
		t.Fatalf("error does not name DataDir: %v", err)
	}
}

func TestDuplicateNodeName(t *testing.T) {
	t.Parallel()
	c := coordinator.DefaultLocalConfig()
	c.NodeName, c.DataDir, c.Cluster.BootstrapExpect, c.Cluster.Voters = "same", t.TempDir(), 1, 1
	first, err := coordinator.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	c.DataDir = t.TempDir()
	c.Join = []string{first.GossipAddr()}
	second, err := coordinator.New(c)
	if err == nil {
		second.Close()
		t.Fatal("a second node with the same name started")
	}
	if !errors.Is(err, coordinator.ErrDuplicateName) || !strings.Contains(err.Error(), `"same"`) {
		t.Fatalf("got %v, want ErrDuplicateName naming the node", err)
	}
}

// TestPlaintextRefused: a Config without TLS is refused unless Insecure is
// set, and the error names the field and the commands that make
// certificates.
func TestPlaintextRefused(t *testing.T) {
	t.Parallel()
	c := coordinator.DefaultConfig()
	c.NodeName, c.GossipAddr, c.RPCAddr = "n", "127.0.0.1:0", "127.0.0.1:0"
	c.DataDir, c.Cluster.BootstrapExpect, c.Cluster.Voters = t.TempDir(), 1, 1
	if c.Insecure {
		t.Fatal("DefaultConfig sets Insecure")
	}
	n, err := coordinator.New(c)
	if err == nil {
		_ = n.Close()
		t.Fatal("New started a node with neither TLS nor Insecure")
	}
	for _, want := range []string{"TLS", "holdfastctl cert create-ca", "holdfastctl cert create-node", "Insecure"} {
		if !errors.Is(err, coordinator.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v; want ErrInvalidConfig mentioning %q", err, want)
		}
	}
	c.Insecure = true
	n, err = coordinator.New(c)
	if err != nil {
		t.Fatalf("New with Insecure: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if !coordinator.DefaultLocalConfig().Insecure {
		t.Fatal("DefaultLocalConfig does not set Insecure")
	}
}

// TestAddressesValidatedUpFront: New checks every address's syntax and
// port range before anything binds or dials, so a mistyped address fails at
// once with a *ConfigError (wrapping ErrInvalidConfig) naming the field and
// what to give, rather than at listen ("listen tcp: address 127947: invalid
// port"), in memberlist's words ("Config.BindAddr"), or never (a join
// retried for ever with a DNS hint).
func TestAddressesValidatedUpFront(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		edit       func(*coordinator.Config)
		field, msg string
	}{
		{func(c *coordinator.Config) { c.GossipAddr = "localhost" }, "GossipAddr",
			`"localhost" is not HOST:PORT (missing port in address): give an address such as 127.0.0.1:7946 (port 0: any free port)`},
		{func(c *coordinator.Config) { c.GossipAddr = "localhost:7946" }, "GossipAddr",
			`"localhost:7946": the host must be an IP address (gossip binds to an IP; a name such as localhost would bind every interface): ` +
				`give 127.0.0.1:7946 for loopback, or this machine's IP`},
		{func(c *coordinator.Config) { c.RPCAddr = "127.0.0.1:127947" }, "RPCAddr", `"127.0.0.1:127947": port 127947 is out of range (0 to 65535)`},
		{func(c *coordinator.Config) { c.RPCAddr = "127.0.0.1:rpc" }, "RPCAddr", `"127.0.0.1:rpc": port "rpc" is not a number`},
		{func(c *coordinator.Config) { c.AdvertiseRPCAddr = "10.0.0.1:70000" }, "AdvertiseRPCAddr", `"10.0.0.1:70000": port 70000 is out of range (0 to 65535)`},
		{func(c *coordinator.Config) { c.Join = []string{"127.0.0.1:7946", "127.0.0.1:nope"} }, "Join[1]",
			`"127.0.0.1:nope": port "nope" is not a number: a join address is a member's gossip HOST:PORT`},
		{func(c *coordinator.Config) { c.Join = []string{"127.0.0.1:0"} }, "Join[0]",
			`"127.0.0.1:0": port 0 names no member: a join address is a member's gossip HOST:PORT`},
		{func(c *coordinator.Config) { c.Join = []string{":7946"} }, "Join[0]", `":7946": no host: a join address is a member's gossip HOST:PORT`},
		{func(c *coordinator.Config) { c.Join = []string{"[::1"} }, "Join[0]", `"[::1": missing ']' in address: a join address is a member's gossip HOST:PORT`},
	} {
		cfg := coordinator.DefaultLocalConfig()
		cfg.NodeName = "n"
		tc.edit(&cfg)
		c, err := coordinator.New(cfg)
		if err == nil {
			c.Close()
		}
		var ce *coordinator.ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, coordinator.ErrInvalidConfig) || ce.Field != tc.field || ce.Msg != tc.msg {
			t.Errorf("got %v;\nwant a ConfigError %s: %s", err, tc.field, tc.msg)
			continue
		}
		if want := "holdfast: invalid config: " + tc.field + ": " + tc.msg; err.Error() != want {
			t.Errorf("text %q, want %q", err.Error(), want)
		}
	}
	// Accepted: a host alone (this node's gossip port there), a DNS name, a name/ prefix.
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName = "n"
	cfg.Cluster.BootstrapExpect = 0
	cfg.Join = []string{"127.0.0.1", "seed.invalid:7946", "other/127.0.0.1:7946"}
	c, err := coordinator.New(cfg)
	if err != nil {
		t.Fatalf("valid join addresses refused: %v", err)
	}
	c.Close()
}

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
