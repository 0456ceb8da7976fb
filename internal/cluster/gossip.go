package cluster

import (
	"fmt"

	"github.com/holdfast-go/holdfast/internal/keyring"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// GossipOptions are what StartGossip needs besides the part's Options.
type GossipOptions struct {
	// Bind and Advertise are the gossip addresses (Config.GossipAddr,
	// Config.AdvertiseGossipAddr); Local picks memberlist's local profile.
	Bind, Advertise string
	Local           bool
	// DataDir holds the gossip keyring ("": memory only); ConfigKeys are
	// Config.Gossip.Keys.
	DataDir    string
	ConfigKeys [][]byte
	// Network, if set, carries gossip (an in-memory network).
	Network transport.GossipNetwork
	// Closed returns why the node is closing (nil until it is), for the
	// keyring's cluster-wide calls.
	Closed func() error
}

// StartGossip creates the gossip member over the keyring the data dir or
// o.ConfigKeys give, and the cluster-wide keyring over it (logging which
// keys gossip uses); the caller then hands the member to Join. A bad
// keyring is a *keyring.FieldError naming its Config field.
func (cl *Cluster) StartGossip(o GossipOptions) (*membership.Membership, *keyring.Keyring, error) {
	store, keys, err := keyring.Open(keyring.FileOptions{DataDir: o.DataDir, ConfigKeys: o.ConfigKeys, Log: cl.o.Log})
	if err != nil {
		return nil, nil, err
	}
	// AdvertiseGossipAddr is set by ResolveAdvertise too when GossipAddr binds every interface.
	mc := cl.GossipConfig(o.Bind, o.Advertise, o.Local, keys)
	if o.Network != nil {
		t, err := o.Network.GossipTransport(o.Bind)
		if err != nil {
			return nil, nil, fmt.Errorf("holdfast: GossipAddr: %w", err)
		}
		mc.Transport = t
	}
	m, err := membership.New(mc)
	if err != nil {
		return nil, nil, fmt.Errorf("holdfast: gossip: %w", err)
	}
	kr := keyring.New(keyring.Options{NodeName: cl.o.NodeName, Gossip: m, Store: store, Caller: cl.o.Caller, Timeout: cl.o.RPCTimeout,
		Plaintext: !cl.o.TLS, Log: cl.o.Log, Closed: o.Closed})
	keyring.LogStart(cl.o.Log, keys, cl.o.TLS)
	return m, kr, nil
}
