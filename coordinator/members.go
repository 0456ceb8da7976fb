package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// protocolVersion is gossiped in node metadata.
const protocolVersion = 1

// localMeta is what this node gossips about itself.
func (c *Coordinator) localMeta() membership.Meta {
	return membership.Meta{
		Version:   protocolVersion,
		NodeID:    c.id,
		RPCAddr:   c.trans.Addr(),
		Voter:     c.cfg.DataDir != "",
		ClusterID: c.ClusterID(),
		Zone:      c.cfg.Zone,
	}
}

// startMembership creates the gossip member and makes a first join attempt.
// A duplicate name fails New; other join failures are retried in the
// background.
func (c *Coordinator) startMembership() error {
	keys, err := c.initialGossipKeys()
	if err != nil {
		return err
	}
	mc := membership.Config{
		NodeName: c.cfg.NodeName,
		BindAddr: c.cfg.GossipAddr,
		Profile:  membership.LAN,
		Meta:     c.localMeta(),
		Accept:   c.acceptMember,
		Keys:     keys,
		Logger:   c.log.With("subsystem", "gossip"),
	}
	if c.cfg.Gossip == GossipLocal {
		mc.Profile = membership.Local
	}
	if gn, ok := c.cfg.Network.(transport.GossipNetwork); ok {
		t, err := gn.GossipTransport(c.cfg.GossipAddr)
		if err != nil {
			return fmt.Errorf("holdfast: GossipAddr: %w", err)
		}
		mc.Transport = t
	}
	m, err := membership.New(mc)
	if err != nil {
		return fmt.Errorf("holdfast: gossip: %w", err)
	}
	c.members = m
	switch {
	case len(keys) > 0:
		c.log.Info("gossip encrypted", "keys", len(keys), "primary", keyID(keys[0]))
	case c.cfg.TLS != nil:
		c.log.Warn("gossip in clear text although TLS is on: anyone who reaches the gossip port can inject members and " +
			"suspicions (raft and leases stay protected by TLS); set Config.GossipKeys (holdfastctl cert create-ca writes gossip.key)")
	default:
		c.log.Info("gossip in clear text: set Config.GossipKeys to encrypt and authenticate it")
	}
	if len(c.cfg.Join) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.RPCTimeout)
	defer cancel()
	if _, err := m.Join(ctx, c.cfg.Join); err != nil {
		if errors.Is(err, membership.ErrDuplicateName) {
			return fmt.Errorf("%w: %w", ErrDuplicateName, err)
		}
		c.logJoinFailure(err, "join failed; retrying in the background")
		c.goLoop(c.retryJoin)
	}
	return nil
}

// retryJoin keeps trying the seeds with backoff until one answers.
func (c *Coordinator) retryJoin() {
	backoff := 200 * time.Millisecond
	for attempt := 1; sleepCtx(c.ctx, backoff); attempt++ {
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.RPCTimeout)
		_, err := c.members.Join(ctx, c.cfg.Join)
		cancel()
		if err == nil {
			c.log.Info("joined the gossip pool", "seeds", c.cfg.Join)
			return
		}
		if errors.Is(err, membership.ErrDuplicateName) {
			c.log.Error("cannot join: node name in use", "error", err)
			return
		}
		if attempt%10 == 0 {
			c.logJoinFailure(err, "still cannot join; retrying")
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// logJoinFailure logs a failed join, as a warning naming Config.GossipKeys
// when the seeds answered but the gossip keys did not match (memberlist
// reports that only in its error text).
func (c *Coordinator) logJoinFailure(err error, msg string) {
	s := err.Error()
	if strings.Contains(s, "decrypt") || strings.Contains(s, "encrypt") {
		c.log.Warn(msg+": the seeds use other gossip keys or none (check Config.GossipKeys)",
			"seeds", c.cfg.Join, "encrypted", c.members.Encrypted(), "error", err)
		return
	}
	c.log.Info(msg, "seeds", c.cfg.Join, "error", err)
}

// acceptMember refuses gossip members that belong to another cluster.
func (c *Coordinator) acceptMember(m membership.Member) error {
	ours := c.ClusterID()
	if ours != "" && m.Meta.ClusterID != "" && m.Meta.ClusterID != ours {
		c.log.Warn("refusing member of a foreign cluster", "member", m.Name, "foreign_cluster", m.Meta.ClusterID, "cluster", ours)
		return fmt.Errorf("member %s belongs to cluster %s, not %s", m.Name, m.Meta.ClusterID, ours)
	}
	if m.Meta.Version != protocolVersion {
		return fmt.Errorf("member %s speaks protocol %d, not %d", m.Name, m.Meta.Version, protocolVersion)
	}
	return nil
}

// memberLoop turns membership events into work: the leader reconciles the
// raft configuration, the bootstrapper re-evaluates.
func (c *Coordinator) memberLoop() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case ev, ok := <-c.members.Events():
			if !ok {
				return
			}
			c.log.Debug("member event", "kind", ev.Kind.String(), "member", ev.Member.Name)
			c.kickReconcile()
			if c.boot != nil {
				c.boot.poke()
			}
		}
	}
}

// clusterIDLoop publishes the cluster ID in gossip as soon as this node's
// replica has it.
func (c *Coordinator) clusterIDLoop() {
	for {
		v := c.fsm.View()
		if id := v.Cluster().ID; id != "" && id != c.ClusterID() {
			c.clusterID.Store(&id)
			c.log.Info("member of cluster", "cluster", id)
			ctx, cancel := context.WithTimeout(c.ctx, c.cfg.RPCTimeout)
			err := c.members.SetMeta(ctx, c.localMeta())
			cancel()
			if err != nil {
				// The new metadata is set locally and still gossiped; only
				// the wait for its first broadcast timed out.
				c.log.Debug("gossiping the cluster ID", "error", err)
			}
		}
		select {
		case <-c.ctx.Done():
			return
		case <-v.Changed():
		}
	}
}

// kickReconcile wakes the leader's reconciler without blocking.
func (c *Coordinator) kickReconcile() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Join asks the gossip pool at seeds to admit this node, in addition to
// Config.Join. It returns how many seeds answered; an error wrapping
// ErrDuplicateName when the name is taken.
func (c *Coordinator) Join(ctx context.Context, seeds []string) (int, error) {
	if c.ctx.Err() != nil {
		return 0, ErrShutdown
	}
	n, err := c.members.Join(ctx, seeds)
	if errors.Is(err, membership.ErrDuplicateName) {
		err = fmt.Errorf("%w: %w", ErrDuplicateName, err)
	}
	return n, err
}
