package coordinator

import (
	"time"

	"github.com/holdfast-go/holdfast/internal/tlsfiles"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// TLSConfig configures mutual TLS on the RPC/raft port (Config.TLS).
//
// Every node presents a certificate signed by the cluster's CA, valid for
// both server and client authentication, whose DNS subject alternative
// names include the node's NodeName; package certs (and `holdfastctl cert`)
// makes them. Both sides of every connection verify the other against the
// CA, and each checks that the other's certificate names the node it
// claims, or that gossip places at the address dialled.
//
// The CA, the certificate and the key are each given as PEM bytes or as a
// file path; when both are set, the PEM bytes win. New reads and checks
// the files, then checks them again every ReloadInterval: a change that
// passes the same checks is used from the next handshake on, without a
// restart; one that does not is logged, counted
// (holdfast_tls_reloads_total{result="error"}) and retried when the files
// change again, and the current certificate stays (docs/SECURITY.md).
//
// To move a running plaintext cluster to TLS without downtime, restart the
// nodes one by one with TLS and RequireTLS false, then one by one with
// RequireTLS true.
type TLSConfig struct {
	// CAFile is the path of a PEM file holding the CA certificate(s) that
	// peers' certificates must chain to.
	CAFile string
	// CertFile is the path of a PEM file holding this node's certificate,
	// followed by any intermediate certificates.
	CertFile string
	// KeyFile is the path of a PEM file holding the private key of the
	// certificate.
	KeyFile string
	// CAPEM, if set, is used instead of CAFile.
	CAPEM []byte
	// CertPEM, if set, is used instead of CertFile.
	CertPEM []byte
	// KeyPEM, if set, is used instead of KeyFile.
	KeyPEM []byte
	// ReloadInterval is how often the files are checked for changes; 0
	// means DefaultTLSReloadInterval, negative turns reloading off.
	ReloadInterval time.Duration
	// RequireTLS refuses plaintext, inbound and outbound. False accepts
	// plaintext peers and falls back to plaintext towards them: only for
	// migrating a running cluster, as it lets anyone reach the node.
	RequireTLS bool
}

// part is the TLS files' source (internal/tlsfiles), nil for a nil t; the
// two structs have the same fields, so a field added to one alone fails to
// compile here.
func (t *TLSConfig) part() *tlsfiles.Source { return (*tlsfiles.Source)(t) }

// DefaultTLSReloadInterval is how often the TLS files are checked for
// changes when TLSConfig.ReloadInterval is zero.
const DefaultTLSReloadInterval = tlsfiles.DefaultInterval

// newTransport starts the listener carrying raft and RPC, with mutual TLS
// when Config.TLS is set (see tlsfiles.Transport).
func (c *Coordinator) newTransport() (*transport.Transport, error) {
	tc := transport.Config{Network: c.cfg.Network, BindAddr: c.cfg.RPCAddr, AdvertiseAddr: c.cfg.AdvertiseRPCAddr,
		LocalID: c.id, DefaultCallTimeout: c.cfg.RPCTimeout, Logger: c.log.With("subsystem", "transport"),
		Cluster: c.clusterFile.ID, AnyCluster: wire.AnyClusterMethods}
	var o *tlsfiles.Options
	if t := c.cfg.TLS; t != nil {
		o = &tlsfiles.Options{Source: *t.part(), NodeName: c.cfg.NodeName, Interval: t.ReloadInterval, Log: c.log, Metrics: &c.tlsMetrics}
	}
	t, r, err := tlsfiles.Transport(tc, o, c.peerName)
	c.tlsReload = r
	return t, configErr(err)
}

// peerName is the transport's TLS.PeerName: the node gossip places at a
// raft or RPC address (tlsfiles.PeerName). Until the node has finished
// starting it reports false and the transport accepts any node the CA
// signed: start sets the RPC handler after c.members, and raft may dial
// before either, so a handler seen here orders the read of c.members after
// its write.
func (c *Coordinator) peerName(addr, id string) (string, bool) {
	if c.trans.Handler() == nil {
		return "", false
	}
	return tlsfiles.PeerName(c.members.Members(), addr, id)
}
