package coordinator_test

import (
	"errors"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
)

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
