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
