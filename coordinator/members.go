package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/holdfast-go/holdfast/internal/cluster"
	"github.com/holdfast-go/holdfast/internal/keyring"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// startMembership creates the gossip member over the keyring the data dir
// or Config.Gossip.Keys gives, makes the cluster-wide keyring over it, and
// hands it to the cluster part, which makes a first join attempt. A
// duplicate name fails New; other join failures are retried in the
// background.
func (c *Coordinator) startMembership() error {
	store, keys, err := keyring.Open(keyring.FileOptions{DataDir: c.cfg.DataDir, ConfigKeys: c.cfg.Gossip.Keys, Log: c.log})
	if err != nil {
		return configErr(err)
	}
	// AdvertiseGossipAddr is set by cluster.ResolveAdvertise too when GossipAddr binds every interface.
	mc := c.cluster.GossipConfig(c.cfg.GossipAddr, c.cfg.AdvertiseGossipAddr, c.cfg.Gossip.Profile == GossipLocal, keys)
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
	c.gossipKeys = keyring.New(keyring.Options{NodeName: c.cfg.NodeName, Gossip: m, Store: store,
		Caller: c.trans, Timeout: c.cfg.RPCTimeout, Plaintext: c.cfg.TLS == nil, Log: c.log,
		Closed: func() error { return context.Cause(c.ctx) }}) // ErrShutdown once closing
	keyring.LogStart(c.log, keys, c.cfg.TLS != nil)
	if err := c.cluster.Join(c.ctx, m); err != nil { // a duplicate name, or another cluster
		var fe *cluster.ForeignClusterError
		if errors.As(err, &fe) {
			return foreignClusterErr(c.cfg.DataDir, fe)
		}
		return fmt.Errorf("%w: %w", ErrDuplicateName, err)
	}
	c.trans.SetRaftResolver(c.cluster.RPCAddrOf) // a voter restarted elsewhere is reached where gossip places it
	return nil
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
