package coordinator

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

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

// tlsMaterial is a TLSConfig loaded and checked.
type tlsMaterial struct {
	cas  *x509.CertPool
	cert tls.Certificate
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
	_, err := c.TLS.load(c.NodeName)
	return err
}

// source returns the PEM bytes and the name of the field they came from:
// pemField when b is set, else the file's content. ok is false when
// neither is set.
func source(b []byte, file, pemField, fileField string) (data []byte, field string, ok bool, err error) {
	switch {
	case len(b) > 0:
		return b, pemField, true, nil
	case file == "":
		return nil, fileField, false, nil
	}
	data, err = os.ReadFile(file)
	if err != nil {
		return nil, fileField, true, fieldErr(fileField, "cannot be read: %v", err)
	}
	return data, fileField, true, nil
}

// load reads and checks the material for node nodeName; its errors wrap
// ErrInvalidConfig and name the field at fault.
func (t *TLSConfig) load(nodeName string) (*tlsMaterial, error) {
	if t.RequireTLS && len(t.CertPEM) == 0 && t.CertFile == "" && len(t.KeyPEM) == 0 && t.KeyFile == "" {
		return nil, fieldErr("TLS.RequireTLS", "is set but no certificate is configured (TLS.CertFile or TLS.CertPEM, TLS.KeyFile or TLS.KeyPEM)")
	}
	caPEM, caField, ok, err := source(t.CAPEM, t.CAFile, "TLS.CAPEM", "TLS.CAFile")
	if err != nil {
		return nil, err
	} else if !ok {
		return nil, fieldErr("TLS.CAFile", "must be set (or TLS.CAPEM): peers are verified against the CA")
	}
	cas, err := parseCerts(caPEM)
	if err != nil {
		return nil, fieldErr(caField, "%v", err)
	}
	certPEM, certField, ok, err := source(t.CertPEM, t.CertFile, "TLS.CertPEM", "TLS.CertFile")
	if err != nil {
		return nil, err
	} else if !ok {
		return nil, fieldErr("TLS.CertFile", "must be set (or TLS.CertPEM): every node presents a certificate")
	}
	chain, err := parseCerts(certPEM)
	if err != nil {
		return nil, fieldErr(certField, "%v", err)
	}
	keyPEM, keyField, ok, err := source(t.KeyPEM, t.KeyFile, "TLS.KeyPEM", "TLS.KeyFile")
	if err != nil {
		return nil, err
	} else if !ok {
		return nil, fieldErr("TLS.KeyFile", "must be set (or TLS.KeyPEM)")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fieldErr(keyField, "cannot be used with the certificate in %s: %v", certField, err)
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	if err := checkLeaf(chain, pool, nodeName, certField, caField); err != nil {
		return nil, err
	}
	return &tlsMaterial{cas: pool, cert: pair}, nil
}

// parseCerts returns the certificates of the CERTIFICATE blocks in b; it
// fails when there is none or one does not parse.
func parseCerts(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("holds a bad certificate: %v", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("holds no PEM certificate")
	}
	return out, nil
}

// checkLeaf verifies the leaf of chain against pool for server and client
// auth, and that it names nodeName.
func checkLeaf(chain []*x509.Certificate, pool *x509.CertPool, nodeName, certField, caField string) error {
	leaf := chain[0]
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
		var unknown x509.UnknownAuthorityError
		switch {
		case errors.As(err, &unknown):
			return fieldErr(certField, "is not signed by the CA in %s (mismatched CA): %v", caField, err)
		case err != nil:
			return fieldErr(certField, "is not valid for this node's TLS (it must be current and allow server and client auth): %v", err)
		}
	}
	if !slices.Contains(leaf.DNSNames, nodeName) {
		return fieldErr(certField, "names %q, not NodeName %q: the certificate must name the node (as a DNS subject alternative name)",
			leaf.DNSNames, nodeName)
	}
	return nil
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
		c.tlsReload.last = c.cfg.TLS.readTLSFiles() // before the load: a change after it is seen
		m, err := c.cfg.TLS.load(c.cfg.NodeName)    // again: files may have changed since New validated them
		if err != nil {
			return nil, err
		}
		tc.TLS = &transport.TLS{
			NodeName:    c.cfg.NodeName,
			Certificate: m.cert,
			CAs:         m.cas,
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
