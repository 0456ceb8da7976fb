package cluster

import (
	"context"
	"errors"
	"sync"

	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// admission decides whether the leader may add a gossip member to the raft
// configuration. Gossip alone proves nothing about a member: without gossip
// keys anyone who reaches the gossip port can announce any name and RPC
// address, and with them anyone who holds the key can. With TLS (Options.TLS) the
// leader therefore first completes a TLS handshake with the member's RPC
// address, in which the member must present a certificate that chains to
// the cluster's CA and names the member (transport.VerifyPeer). A member
// that fails is not added, and is retried at the next reconciliation.
//
// Without TLS there is no identity to check and every
// live member of the cluster is added, as before. With TLS that does not
// require it (a cluster migrating from plaintext), a member that does not
// speak TLS at all is added with a warning, so the migration keeps working;
// a member that speaks TLS with the wrong certificate is refused.
type admission struct {
	mu      sync.Mutex
	refused map[string]string // node ID → last reason logged at Warn
}

// admit reports whether member m may enter the raft configuration: it
// proves its identity (with TLS), and its own answer to
// wire.MethodIdentity shows that its data dir belongs to no other cluster.
func (cl *Cluster) admit(ctx context.Context, m membership.Member) bool {
	if !cl.verified(ctx, m) {
		return false
	}
	reason := cl.foreignMember(ctx, m)
	if reason == "" {
		return true
	}
	if cl.admitted.note(m.Meta.NodeID, reason) {
		cl.log.Warn("not adding member to the raft configuration", "member", m.Name, "id", m.Meta.NodeID,
			"addr", m.Meta.RPCAddr, "reason", reason)
	}
	return false
}

// verified reports whether member m proved, with TLS, that it is the node
// its gossip names (always true without TLS).
func (cl *Cluster) verified(ctx context.Context, m membership.Member) bool {
	if !cl.o.TLS {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, cl.o.RPCTimeout)
	defer cancel()
	err := cl.o.Caller.VerifyPeer(ctx, m.Meta.RPCAddr, m.Name)
	if err == nil {
		cl.admitted.forget(m.Meta.NodeID)
		return true
	}
	if errors.Is(err, transport.ErrPlaintextPeer) && !cl.o.RequireTLS {
		cl.log.Warn("adding a member that does not speak TLS (TLS.RequireTLS is false: migration)", "member", m.Name)
		return true
	}
	reason := err.Error()
	if cl.admitted.note(m.Meta.NodeID, reason) {
		cl.log.Warn("not adding member to the raft configuration: its RPC address did not prove, by a certificate of the cluster's CA, that it is the node",
			"member", m.Name, "id", m.Meta.NodeID, "addr", m.Meta.RPCAddr, "error", err)
	} else {
		cl.log.Debug("member still not verified", "member", m.Name, "error", err)
	}
	return false
}

// note records reason for id and reports whether it is new (worth a
// warning).
func (a *admission) note(id, reason string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.refused == nil {
		a.refused = map[string]string{}
	}
	if a.refused[id] == reason {
		return false
	}
	if len(a.refused) > 1024 { // bounded: forget old reasons wholesale
		clear(a.refused)
	}
	a.refused[id] = reason
	return true
}

// forget drops id's refusal once it is verified.
func (a *admission) forget(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.refused, id)
}
