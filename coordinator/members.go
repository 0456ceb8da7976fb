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
	mc.AdvertiseAddr = c.cfg.AdvertiseGossipAddr // set by resolveAdvertise too when GossipAddr binds every interface
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
		c.logJoinFailure(err, 1, joinLogFirst)
		c.goLoop(c.retryJoin)
	}
	return nil
}

// Join retry pacing: attempts back off from joinRetryFirst to
// joinRetryMax; failures are logged at warning level at once, then with a
// backoff of their own from joinLogFirst to joinLogMax.
const (
	joinRetryFirst = 200 * time.Millisecond
	joinRetryMax   = 5 * time.Second
	joinLogFirst   = time.Second
	joinLogMax     = time.Minute
)

// retryJoin keeps trying the seeds with backoff while this node is alone
// in the gossip pool: until a seed answers, or another member reaches it.
func (c *Coordinator) retryJoin() {
	backoff, logEvery := joinRetryFirst, joinLogFirst
	lastLog := time.Now()
	for attempt := 2; sleepCtx(c.ctx, jitter(backoff)); attempt++ {
		if n := c.aliveMembers(); n > 1 {
			c.log.Info("in the gossip pool: another member reached this node; no longer retrying the seeds", "seeds", c.cfg.Join, "alive", n)
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.RPCTimeout)
		_, err := c.members.Join(ctx, c.cfg.Join)
		cancel()
		switch {
		case err == nil:
			c.log.Info("joined the gossip pool", "seeds", c.cfg.Join, "attempts", attempt)
			return
		case errors.Is(err, membership.ErrDuplicateName):
			c.log.Error("cannot join: node name in use", "error", err)
			return
		case c.ctx.Err() != nil:
			return
		case time.Since(lastLog) >= logEvery:
			logEvery = min(2*logEvery, joinLogMax)
			c.logJoinFailure(err, attempt, logEvery)
			lastLog = time.Now()
		default:
			c.log.Debug("join failed; retrying", "seeds", c.cfg.Join, "attempt", attempt, "error", err)
		}
		backoff = min(backoff*2, joinRetryMax)
	}
}

// logJoinFailure logs a failed join as a warning: the error on one line
// and a hint (wrong port, nothing listening, other gossip keys...).
func (c *Coordinator) logJoinFailure(err error, attempt int, next time.Duration) {
	line, hint := describeJoinError(err)
	args := []any{"seeds", c.cfg.Join, "attempt", attempt, "error", line}
	if hint != "" {
		args = append(args, "hint", hint)
	}
	if c.members.Encrypted() || strings.Contains(hint, "gossip keys") {
		args = append(args, "encrypted", c.members.Encrypted())
	}
	args = append(args, "next_report", next)
	if strings.Contains(line, "only this node") {
		// A DNS name that lists only this node so far (the first pod of a
		// StatefulSet): a normal start, the others appear soon.
		c.log.Info("join: the seeds name only this node so far; retrying while this node is alone", args...)
		return
	}
	c.log.Warn("cannot join the gossip pool; retrying while this node is alone", args...)
}

// aliveMembers counts the members gossip shows alive, this node included.
func (c *Coordinator) aliveMembers() int {
	n := 0
	for _, m := range c.members.Members() {
		if m.State == membership.Alive {
			n++
		}
	}
	return n
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
