package coordinator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestEndedSessionClosedAfterHeal cuts the leader off until its session
// lapsed and its first attempt to close it has timed out, then heals: the
// node must close the ended session itself once it reaches the new leader,
// so its shards move on at once. The new leader would expire it only
// SessionTTL + ExpiryGrace after its election; ExpiryGrace is long here so
// that an expiry cannot be what frees the shards within the wait.
func TestEndedSessionClosedAfterHeal(t *testing.T) {
	t.Parallel()
	const shards = 8
	const grace = 30 * time.Second
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, InMemory: true, Configure: func(_ int, c *coordinator.Config) {
		c.Shards.Count = shards
		c.Session.ExpiryGrace = grace
	}})
	leader := cl.WaitFormed(formTimeout)
	waitBalanced(t, cl, shards, formTimeout)
	victim := leader.Index
	old := cl.Node(victim).C().SessionID()
	if old == "" {
		t.Fatal("the leader has no session")
	}
	cfg := cl.Node(victim).Config

	cl.Isolate(victim)
	cl.WaitFor("the cut-off node's session belief to lapse", formTimeout, func() error {
		if cl.Node(victim).C().SessionID() == old {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	// The fault schedule: stay cut off past the first close attempt's
	// RPCTimeout, so that only a retry can close the session.
	pace(context.Background(), cfg.RPCTimeout+500*time.Millisecond)
	cl.Heal()
	healed := time.Now()
	cl.WaitFormed(formTimeout)

	// Any leader elected during the isolation keeps the old session until
	// at least healed + grace: waiting a third of that shows whether the
	// node closed it.
	err := holdfasttest.Poll(grace/3, func() error {
		l, err := cl.Leader()
		if err != nil {
			return err
		}
		for s := range coordinator.ShardID(shards) {
			if o, ok := l.C().Owner(s); ok && o.Session == old {
				return fmt.Errorf("%w: shard %d still owned by the ended session %.8s", holdfasttest.ErrNotYet, s, old)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v after the heal: %v", time.Since(healed).Round(time.Millisecond), err)
	}
	t.Logf("the ended session's shards were free again %v after the heal", time.Since(healed).Round(time.Millisecond))
}
