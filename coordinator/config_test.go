package coordinator_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
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
		{"Voters", func(c *coordinator.Config) { c.Voters = 2 }},
		{"Voters", func(c *coordinator.Config) { c.Voters = 0 }},
		{"BootstrapExpect", func(c *coordinator.Config) { c.BootstrapExpect = 5 }},
		{"BootstrapExpect", func(c *coordinator.Config) { c.DataDir = "" }},
		{"Shards", func(c *coordinator.Config) { c.Shards = 0 }},
		{"Shards", func(c *coordinator.Config) { c.Shards = -3 }},
		{"SessionTTL", func(c *coordinator.Config) { c.SessionTTL = 100 * time.Millisecond }},
		{"Raft.LeaderLeaseTimeout", func(c *coordinator.Config) { c.Raft.LeaderLeaseTimeout = time.Hour }},
		{"Raft.HeartbeatTimeout", func(c *coordinator.Config) { c.Raft.HeartbeatTimeout = 0 }},
		{"ServerStabilization", func(c *coordinator.Config) { c.ServerStabilization = 0 }},
		{"RPCTimeout", func(c *coordinator.Config) { c.RPCTimeout = 0; c.BootstrapPromiseTTL = time.Hour }},
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
	c.NodeName, c.DataDir, c.BootstrapExpect, c.Voters = "a", t.TempDir(), 1, 1
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
	c.NodeName, c.DataDir, c.BootstrapExpect, c.Voters = "same", t.TempDir(), 1, 1
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
	c.DataDir, c.BootstrapExpect, c.Voters = t.TempDir(), 1, 1
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
