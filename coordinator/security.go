package coordinator

import (
	"context"
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

// Gossip keyring errors. Cluster-wide calls wrap them in an error that names
// the nodes concerned.
var (
	// ErrGossipNotEncrypted is returned by InstallGossipKey, UseGossipKey
	// and RemoveGossipKey when this node, or a live member they reach, runs
	// without gossip encryption (empty Config.Gossip.Keys). Encryption cannot
	// be switched on at run time: restart the nodes with keys.
	ErrGossipNotEncrypted = wire.ErrGossipNotEncrypted
	// ErrInvalidGossipKey is returned by the gossip key methods for a key
	// that is not 16, 24 or 32 bytes long.
	ErrInvalidGossipKey = wire.ErrInvalidGossipKey
	// ErrGossipKeyNotInstalled is returned by UseGossipKey when some live
	// member does not have the key installed; no node was changed.
	ErrGossipKeyNotInstalled = wire.ErrGossipKeyNotInstalled
	// ErrGossipKeyPrimary is returned by RemoveGossipKey when the key is the
	// primary key of some live member; no node was changed.
	ErrGossipKeyPrimary = wire.ErrGossipKeyPrimary
)

// GossipKeys returns copies of this node's gossip keyring: the primary key,
// which encrypts outgoing gossip, and all keys accepted for incoming gossip,
// the primary first. Both are nil when gossip is not encrypted.
func (c *Coordinator) GossipKeys() (primary []byte, all [][]byte) { return c.members.Keys() }

// InstallGossipKey adds key (16, 24 or 32 bytes) to the gossip keyring of
// every live member, this node included, so that all of them accept gossip
// encrypted with it; nobody encrypts with it yet. It is the first of the
// three steps of a key rotation without downtime:
//
//  1. InstallGossipKey(new): every node accepts the new key.
//  2. UseGossipKey(new): every node encrypts with it.
//  3. RemoveGossipKey(old): no node accepts the old key any more.
//
// Each step reaches the members gossip reports alive when it starts,
// through the RPC port, in parallel, each call bounded by ctx and
// Config.RPCTimeout; it is idempotent, so a step that failed on some node
// is simply repeated. The error names every node that failed, joined (use
// errors.Is with the sentinels). Members that are down, or that join while
// a step runs, miss it: start them with the current keys. The calls are not
// serialised across the cluster: run one rotation at a time, from one node.
//
// Security: the key travels in the RPC request, readable by anyone on the
// path and accepted from any peer unless the RPC port uses mutual TLS
// (Config.TLS); without TLS a warning is logged.
//
// Persistence: a node with a DataDir writes its keyring to
// DataDir/gossip-keyring.json after every step and starts from it as long
// as its Config.Gossip.Keys is unchanged, so a node restarted after a
// rotation rejoins as it is; a node without a DataDir keeps the keyring in
// memory only (docs/SECURITY.md tells the rules). Encryption cannot be
// switched on or off in a running cluster.
//
// It returns ErrGossipNotEncrypted (wrapped) when this node or a member has
// no gossip encryption, ErrInvalidGossipKey for a key of the wrong size, and
// ErrShutdown after Shutdown or Close.
func (c *Coordinator) InstallGossipKey(ctx context.Context, key []byte) error {
	return c.gossipKeys.Install(ctx, key)
}

// UseGossipKey makes key the primary gossip key, the one outgoing gossip is
// encrypted with, on every live member (step 2 of a rotation, see
// InstallGossipKey). It first checks that every live member has the key
// installed and otherwise returns an error wrapping
// ErrGossipKeyNotInstalled that names the members lacking it, having
// changed nothing. Members switch one by one; while they do, each decrypts
// the others' gossip with either key. Other errors are as for
// InstallGossipKey.
func (c *Coordinator) UseGossipKey(ctx context.Context, key []byte) error {
	return c.gossipKeys.Use(ctx, key)
}

// RemoveGossipKey removes key from the gossip keyring of every live member,
// which then drop gossip encrypted with it (step 3 of a rotation, see
// InstallGossipKey). It first checks that the key is no live member's
// primary key and otherwise returns an error wrapping ErrGossipKeyPrimary
// that names those members, having changed nothing. Removing a key a node
// does not have does nothing there. Other errors are as for
// InstallGossipKey.
func (c *Coordinator) RemoveGossipKey(ctx context.Context, key []byte) error {
	return c.gossipKeys.Remove(ctx, key)
}
