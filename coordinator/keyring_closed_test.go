package coordinator_test

import (
	"context"
	"errors"
	"testing"

	"github.com/holdfast-go/holdfast/coordinator"
)

// TestGossipKeyStepsAfterClose: every rotation step of a closed node
// returns ErrShutdown, and its keyring is unchanged.
func TestGossipKeyStepsAfterClose(t *testing.T) {
	t.Parallel()
	c := coordinator.DefaultLocalConfig()
	c.NodeName, c.Cluster.BootstrapExpect, c.Gossip.Keys = "n", 0, [][]byte{gossipKey(1)}
	node, err := coordinator.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	steps := map[string]func(context.Context, []byte) error{
		"install": node.InstallGossipKey, "use": node.UseGossipKey, "remove": node.RemoveGossipKey,
	}
	for name, step := range steps {
		if err := step(context.Background(), gossipKey(2)); !errors.Is(err, coordinator.ErrShutdown) {
			t.Errorf("%s after Close = %v, want ErrShutdown", name, err)
		}
	}
	if _, all := node.GossipKeys(); len(all) != 1 {
		t.Errorf("keyring after refused steps: %d keys, want 1", len(all))
	}
}
