package membership

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
	"github.com/holdfast-go/holdfast/transport/memnet"
)

// startMemnetNode starts a node named host on n's gossip network.
func startMemnetNode(t *testing.T, n *memnet.Network, host string, p Profile) *Membership {
	t.Helper()
	tr, err := n.Node(host).GossipTransport(host + ":7946")
	if err != nil {
		t.Fatal(err)
	}
	return startNode(t, host, func(c *Config) {
		c.BindAddr, c.Transport, c.Profile = "", tr, p
		c.Logger = newTestLogger(t).With(slog.String("node", host))
	})
}

// failedFor checks that obs has seen name Failed for at least d.
func failedFor(obs *Membership, name string, d time.Duration) error {
	mb, ok := obs.Member(name)
	if !ok || mb.State != Failed {
		return fmt.Errorf("%s does not see %s failed", obs.Local().Name, name)
	}
	if since := time.Since(mb.Since); since < d {
		return fmt.Errorf("%s has seen %s failed for %v of %v", obs.Local().Name, name, since, d)
	}
	return nil
}

// TestHealedNodeBackAlive cuts one node of three off, keeps it cut until
// every side has held the other failed past memberlist's
// GossipToTheDeadTime (after which memberlist alone never contacts a dead
// node again), heals, and measures how long until every member list shows
// all three alive. The reconnect loop is what brings them back.
func TestHealedNodeBackAlive(t *testing.T) {
	for _, tc := range []struct {
		profile Profile
		dead    time.Duration // memberlist's GossipToTheDeadTime for the profile
	}{{Local, 15 * time.Second}, {LAN, 30 * time.Second}} {
		t.Run(tc.profile.String(), func(t *testing.T) {
			t.Parallel()
			n := memnet.New(13)
			t.Cleanup(n.Close)
			a := startMemnetNode(t, n, "a", tc.profile)
			b := startMemnetNode(t, n, "b", tc.profile)
			c := startMemnetNode(t, n, "c", tc.profile)
			join(t, b, a)
			join(t, c, a)
			nodes := []*Membership{a, b, c}
			testkit.Eventually(t, "three alive", waitTimeout, func() error { return allAlive(nodes, "a", "b", "c") })
			n.Isolate("c")
			hold := func() error {
				for _, err := range []error{failedFor(a, "c", tc.dead), failedFor(b, "c", tc.dead),
					failedFor(c, "a", tc.dead), failedFor(c, "b", tc.dead)} {
					if err != nil {
						return err
					}
				}
				return nil
			}
			deadline := time.Now().Add(2*tc.dead + waitTimeout)
			for err := hold(); err != nil; err = hold() {
				if time.Now().After(deadline) {
					t.Fatalf("the cut never showed: %v", err)
				}
				time.Sleep(50 * time.Millisecond) // polling a condition
			}
			healed := time.Now()
			n.Heal()
			testkit.Eventually(t, "three alive after the heal", waitTimeout, func() error { return allAlive(nodes, "a", "b", "c") })
			t.Logf("profile %s: healed node alive in every member list %v after the heal",
				tc.profile, time.Since(healed).Round(time.Millisecond))
		})
	}
}
