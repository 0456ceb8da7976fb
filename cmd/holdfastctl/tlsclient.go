package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"strings"
)

// tlsFlags are the flags for admin endpoints served over HTTPS with client
// certificates (as examples/ledger does when it has certificates).
type tlsFlags struct {
	ca, cert, key, serverName string
}

// register adds the TLS flags to fs.
func (f *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.ca, "ca", "", "PEM `file` of the CA that signed the node's certificate (HTTPS; e.g. certs/ca.pem)")
	fs.StringVar(&f.cert, "cert", "", "PEM `file` of holdfastctl's client certificate (e.g. certs/client.pem from cert create-client)")
	fs.StringVar(&f.key, "key", "", "PEM `file` of the client certificate's private key (e.g. certs/client-key.pem)")
	fs.StringVar(&f.serverName, "server-name", "", "verify the node's certificate for this `name` (a node name) instead of the -addr host")
}

// set reports whether any TLS flag was given.
func (f *tlsFlags) set() bool { return f.ca != "" || f.cert != "" || f.key != "" || f.serverName != "" }

// config returns the client TLS configuration the flags describe, or nil
// when none was given. Errors are *usageError.
func (f *tlsFlags) config() (*tls.Config, error) {
	if !f.set() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.serverName}
	if f.ca != "" {
		b, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, &usageError{fmt.Sprintf("-ca: %v", err)}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, &usageError{fmt.Sprintf("-ca %s holds no PEM certificate", f.ca)}
		}
		c.RootCAs = pool
	}
	if (f.cert == "") != (f.key == "") {
		return nil, &usageError{"-cert and -key go together"}
	}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, &usageError{fmt.Sprintf("-cert/-key: %v", err)}
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// withTLS switches a HOST:PORT target to https when TLS flags are given,
// and refuses them with an http:// URL.
func withTLS(t target, c *tls.Config) (target, error) {
	if c == nil {
		return t, nil
	}
	switch {
	case strings.HasPrefix(t.base, "http://") && strings.Contains(t.name, "://"):
		return t, &usageError{fmt.Sprintf("-addr %s is plain http but TLS flags were given; use https://", t.name)}
	case strings.HasPrefix(t.base, "http://"):
		t.base = "https://" + strings.TrimPrefix(t.base, "http://")
	}
	t.tls = c
	return t, nil
}
