package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tlsFlags are the flags for admin endpoints served over HTTPS with client
// certificates (as examples/ledger does when it has certificates).
type tlsFlags struct {
	ca, cert, key, serverName string
	certs                     string // -certs: a directory of cert's files
}

// register adds the TLS flags to fs.
func (f *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.ca, "ca", "", "PEM `file` of the CA that signed the node's certificate (HTTPS; default: -certs/ca.pem)")
	fs.StringVar(&f.cert, "cert", "", "PEM `file` of holdfastctl's client certificate (cert create-client; default: -certs/client.pem)")
	fs.StringVar(&f.key, "key", "", "PEM `file` of the client certificate's private key (default: -certs/client-key.pem)")
	fs.StringVar(&f.serverName, "server-name", "", "verify the node's certificate for this `name` (a node name) instead of the -addr host")
	fs.StringVar(&f.certs, "certs", "", "`dir` of ca.pem, client.pem and client-key.pem, as holdfastctl cert writes them "+
		"(default: "+shownCertDir+", used for a HOST:PORT -addr when all three are there)")
}

// explicit reports whether a TLS file or name flag was given.
func (f *tlsFlags) explicit() bool {
	return f.ca != "" || f.cert != "" || f.key != "" || f.serverName != "" || f.certs != ""
}

// config returns the client TLS configuration the flags describe, or nil
// when none was given and the default directory (defaultCertDir) lacks
// cert's files; implicit is true when the files were found there
// unasked (a plain-HTTP node is then read over HTTP). Errors are
// *usageError.
func (f *tlsFlags) config() (c *tls.Config, implicit bool, err error) {
	if !f.explicit() {
		dir := defaultCertDir()
		if dir == "" || !allExist(dir, caCertFile, clientCertFile, clientKeyFile) {
			return nil, false, nil
		}
		g := tlsFlags{certs: dir}
		c, _, err := g.config()
		return c, true, err
	}
	if f.certs != "" {
		for _, d := range []struct {
			p    *string
			name string
		}{{&f.ca, caCertFile}, {&f.cert, clientCertFile}, {&f.key, clientKeyFile}} {
			if *d.p != "" {
				continue
			}
			*d.p = filepath.Join(f.certs, d.name)
			if _, err := os.Stat(*d.p); err != nil {
				return nil, false, &usageError{fmt.Sprintf("-certs %s: no %s there (%v): holdfastctl cert create-client -dir %s writes client.pem "+
					"and client-key.pem, and ca.pem comes from cert create-ca", f.certs, d.name, pathErr(err), f.certs)}
			}
		}
	}
	c = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.serverName}
	if f.ca != "" {
		b, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, false, &usageError{fmt.Sprintf("-ca: %v", err)}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, false, &usageError{fmt.Sprintf("-ca %s holds no PEM certificate", f.ca)}
		}
		c.RootCAs = pool
	}
	if (f.cert == "") != (f.key == "") {
		return nil, false, &usageError{"-cert and -key go together"}
	}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, false, &usageError{fmt.Sprintf("-cert/-key: %v", err)}
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, false, nil
}

// allExist reports whether every name exists in dir.
func allExist(dir string, names ...string) bool {
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

// pathErr drops the path an *fs.PathError repeats.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// withTLS switches a HOST:PORT target to https when TLS flags are given
// (or, implicit, the default directory's files were found), and refuses
// them with an http:// URL. An implicit configuration never overrides an
// http:// URL, and falls back to plain HTTP when the node serves it.
func withTLS(t target, c *tls.Config, implicit bool) (target, error) {
	if c == nil {
		return t, nil
	}
	switch {
	case strings.HasPrefix(t.base, "http://") && strings.Contains(t.name, "://") && implicit:
		return t, nil
	case strings.HasPrefix(t.base, "http://") && strings.Contains(t.name, "://"):
		return t, &usageError{fmt.Sprintf("-addr %s is plain http but TLS flags were given; use https://", t.name)}
	case strings.HasPrefix(t.base, "http://"):
		if implicit {
			t.plain = t.base
		}
		t.base = "https://" + strings.TrimPrefix(t.base, "http://")
	}
	t.tls = c
	return t, nil
}
