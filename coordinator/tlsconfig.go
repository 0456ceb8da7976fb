package coordinator

import (
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/internal/tlsfiles"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// TLSConfig configures mutual TLS on the RPC/raft port (Config.TLS).
//
// Every node presents a certificate signed by the cluster's CA, valid for
// both server and client authentication, whose DNS subject alternative
// names include the node's NodeName; package certs makes such a CA and
// certificates for tests and demos. Both sides of every connection verify
// the other: a server refuses a client whose certificate is not signed by
// the CA or does not name the node the client says it is, and a client
// refuses a server whose certificate is not signed by the CA or, when gossip
// tells which node lives at the address it dials, does not name that node.
// See package transport for the wire format.
//
// The CA, the certificate and the key are each given as PEM bytes or as a
// file path; when both are set, the PEM bytes win. Files are read by New
// and then checked every ReloadInterval: when they change, they are loaded
// and checked again, and the new certificate (and CA) is used from the next
// handshake on, without a restart; connections already open keep theirs.
// A change that does not pass the checks New makes is logged as an error
// and counted (holdfast_tls_reloads_total{result="error"}), and the
// current certificate stays in use. Write the new files in place of the
// old (a rename is atomic; separate writes of the certificate and the key
// are fine too: a half-updated pair fails the checks and is retried when
// the second file changes).
//
// To move a running plaintext cluster to TLS without downtime, restart the
// nodes one by one with TLS and RequireTLS false (they accept plaintext from
// the nodes not yet restarted, and fall back to plaintext towards them),
// then restart them one by one with RequireTLS true.
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
	// RequireTLS refuses plaintext: inbound raft and RPC connections that
	// do not start a TLS handshake are closed, and peers that do not speak
	// TLS are not retried in plaintext. False accepts plaintext peers (and
	// falls back to plaintext towards them), which is meant only for
	// migrating a running cluster: it lets anyone reach the node unsigned.
	RequireTLS bool
}

// validateTLS checks Config.TLS: every file readable, every PEM well
// formed, the key matching the certificate, the certificate signed by the
// CA, valid for server and client auth, and naming NodeName.
func (c *Config) validateTLS() error {
	if c.TLS == nil {
		if c.Insecure {
			return nil
		}
		return fieldErr("TLS", "is nil: holdfast refuses to run its RPC/raft port in plaintext, where anyone who reaches it "+
			"can forge raft commands. Make certificates with `holdfastctl cert create-ca` and "+
			"`holdfastctl cert create-node NAME -addr HOST` and set Config.TLS, or set Config.Insecure = true "+
			"to run without TLS (tests and demos only)")
	}
	_, err := tlsfiles.Load(c.TLS.source(), c.NodeName)
	return configErr(err)
}

// DefaultTLSReloadInterval is how often the TLS files are checked for
// changes when TLSConfig.ReloadInterval is zero.
const DefaultTLSReloadInterval = 10 * time.Second

// source is where the material comes from, for package tlsfiles.
func (t *TLSConfig) source() tlsfiles.Source {
	return tlsfiles.Source{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile,
		CAPEM: t.CAPEM, CertPEM: t.CertPEM, KeyPEM: t.KeyPEM, RequireTLS: t.RequireTLS}
}

// reloadInterval resolves ReloadInterval: 0 is the default, negative off.
func (t *TLSConfig) reloadInterval() time.Duration {
	if t.ReloadInterval == 0 {
		return DefaultTLSReloadInterval
	}
	return t.ReloadInterval
}

// newTransport starts the listener carrying raft and RPC, with mutual TLS
// when Config.TLS is set.
func (c *Coordinator) newTransport() (*transport.Transport, error) {
	tc := transport.Config{
		Network:            c.cfg.Network,
		BindAddr:           c.cfg.RPCAddr,
		AdvertiseAddr:      c.cfg.AdvertiseRPCAddr,
		LocalID:            c.id,
		DefaultCallTimeout: c.cfg.RPCTimeout,
		Logger:             c.log.With("subsystem", "transport"),
	}
	if c.cfg.TLS != nil {
		// Loaded again: the files may have changed since New validated them.
		r, m, err := tlsfiles.New(tlsfiles.Options{Source: c.cfg.TLS.source(), NodeName: c.cfg.NodeName,
			Interval: c.cfg.TLS.reloadInterval(), Log: c.log, Metrics: &c.tlsMetrics})
		if err != nil {
			return nil, configErr(err)
		}
		c.tlsReload = r
		tc.TLS = &transport.TLS{
			NodeName:    c.cfg.NodeName,
			Certificate: m.Cert,
			CAs:         m.CAs,
			Required:    c.cfg.TLS.RequireTLS,
			PeerName:    c.peerName,
		}
	}
	t, err := transport.New(tc)
	if err != nil {
		return nil, fmt.Errorf("holdfast: RPCAddr: %w", err)
	}
	return t, nil
}

// peerName names the node that gossip places at a raft or RPC address: the
// member with raft ID id when there is one, else the member advertising
// addr as its RPC address (an alive one first). It is the transport's
// TLS.PeerName; until the node has finished starting, or for an address
// gossip does not know, it reports false and the transport accepts any node
// the CA signed.
func (c *Coordinator) peerName(addr, id string) (string, bool) {
	// start sets the RPC handler after c.members, and raft may dial before
	// either: a handler seen here orders the read of c.members after its
	// write.
	if c.trans.Handler() == nil {
		return "", false
	}
	m := c.members
	name, found := "", false
	for _, mem := range m.Members() {
		switch {
		case id != "" && mem.Meta.NodeID == id:
			return mem.Name, true
		case mem.Meta.RPCAddr == addr && (!found || mem.State == membership.Alive):
			name, found = mem.Name, true
		}
	}
	return name, found
}

// startTLSReload starts following the TLS files when some material comes
// from files and reloading is not turned off (the reload metric is
// registered with the others, on every node).
func (c *Coordinator) startTLSReload() {
	if c.tlsReload != nil {
		c.tlsReload.Start(c.trans)
	}
}
