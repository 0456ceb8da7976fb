package keyring

import (
	"fmt"

	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// Start starts a node's gossip over its keyring: it opens the keyring f
// gives (Open: a bad one is a *FieldError naming its Config field),
// creates the gossip member with the configuration config makes for those
// keys (over network's transport when network is set), makes the
// cluster-wide Keyring over it with o (Start fills in o.Gossip and
// o.Store), and logs how gossip starts (LogStart; TLS on unless
// o.Plaintext).
func Start(f FileOptions, config func(keys [][]byte) membership.Config, network transport.GossipNetwork,
	o Options) (*membership.Membership, *Keyring, error) {
	store, keys, err := Open(f)
	if err != nil {
		return nil, nil, err
	}
	mc := config(keys)
	if network != nil {
		t, err := network.GossipTransport(mc.BindAddr)
		if err != nil {
			return nil, nil, fmt.Errorf("holdfast: GossipAddr: %w", err)
		}
		mc.Transport = t
	}
	m, err := membership.New(mc)
	if err != nil {
		return nil, nil, fmt.Errorf("holdfast: gossip: %w", err)
	}
	o.Gossip, o.Store = m, store
	kr := New(o)
	LogStart(o.Log, keys, !o.Plaintext)
	return m, kr, nil
}
