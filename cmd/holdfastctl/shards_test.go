package main

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestShardCommands runs shards plan, pin, move and unpin against node0's
// admin endpoint: the plan shows every node with its target; a pin puts
// the shard on its node and shards lists it; a move hands a shard over
// with a new token; a bad SHARD is a usage error.
func TestShardCommands(t *testing.T) {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: func(_ int, c *coordinator.Config) {
		c.Shards.Count = 12
	}})
	cl.WaitFormed(settle)
	c0 := cl.Node(0).C()
	srv := httptest.NewServer(admin.New(c0, admin.Options{Authorize: admin.LoopbackOnly}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	act := func(args ...string) string {
		t.Helper()
		return mustCtl(t, append([]string{"-addr", addr, "-confirm", "node0"}, args...)...)
	}
	cl.WaitFor("a plan with three nodes", settle, func() error {
		out := mustCtl(t, "-addr", addr, "shards", "plan")
		if !strings.Contains(out, "balancing by count") || strings.Count(out, "\nnode") != 3 {
			return fmt.Errorf("%w: %s", holdfasttest.ErrNotYet, out)
		}
		return nil
	})
	if out := act("shards", "pin", "3", "node1"); !strings.Contains(out, "shard 3 pinned to node1.") {
		t.Errorf("pin: %q", out)
	}
	cl.WaitFor("shard 3 on node1, listed as pinned", settle, func() error {
		out := mustCtl(t, "-addr", addr, "shards")
		if !regexp.MustCompile(`(?m)^3 +owned +node1 `).MatchString(out) || !strings.Contains(out, "shard 3 is pinned to node1\n") {
			return fmt.Errorf("%w: %s", holdfasttest.ErrNotYet, out)
		}
		return nil
	})
	sh, _ := c0.Table().Shard(4)
	to := "node2"
	if sh.Owner.Node.Name == to {
		to = "node1"
	}
	if out := act("shards", "move", "4", to); !regexp.MustCompile(`shard 4 moved to ` + to + ` \(token \d+\)\.`).MatchString(out) {
		t.Errorf("move: %q", out)
	}
	if out := act("shards", "unpin", "3"); !strings.Contains(out, "shard 3 unpinned from node1") {
		t.Errorf("unpin: %q", out)
	}
	if code, _, errOut := ctl("-addr", addr, "-confirm", "node0", "shards", "pin", "x", "node1"); code != 2 || !strings.Contains(errOut, "want a shard number") {
		t.Errorf("a bad SHARD: exit %d, %q", code, errOut)
	}
	if code, _, errOut := ctl("-addr", addr, "-confirm", "node0", "shards", "pin", "3", "nobody"); code != 1 || !strings.Contains(errOut, `no node "nobody"`) {
		t.Errorf("pin to nobody: exit %d, %q", code, errOut)
	}
}
