package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/certs"
	"github.com/holdfast-go/holdfast/coordinator"
)

// secOptions are the security flags: where the certificates and the gossip
// key are, or -insecure.
type secOptions struct {
	certs, ca, cert, key string
	gossipKey            string
	insecure, httpTLS    bool
}

// errNoCerts is the refusal of a node started with neither certificates
// nor -insecure.
var errNoCerts = errors.New("no certificates: the raft/RPC port refuses to run in plaintext, where anyone who reaches it " +
	"can forge raft commands.\n" +
	"  Make them once per cluster:   holdfastctl cert create-ca            (writes ~/.holdfast/certs; -dir DIR to choose)\n" +
	"  and once per node:            holdfastctl cert create-node -addr HOST NAME\n" +
	"  then start with -certs ~/.holdfast/certs (or -ca, -cert and -key), or with -insecure to run without TLS (one machine, a try)")

// register adds the security flags to fs.
func (s *secOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&s.certs, "certs", "", "`dir` of the files holdfastctl cert writes: ca.pem, NODE.pem, NODE-key.pem and gossip.key")
	fs.StringVar(&s.ca, "ca", "", "PEM `file` of the cluster's CA certificate (default: -certs/ca.pem)")
	fs.StringVar(&s.cert, "cert", "", "PEM `file` of this node's certificate (default: -certs/NODE.pem)")
	fs.StringVar(&s.key, "key", "", "PEM `file` of this node's private key (default: -certs/NODE-key.pem)")
	fs.StringVar(&s.gossipKey, "gossip-key", "", "`file` of the cluster's gossip key, base64 (default: -certs/gossip.key if it exists)")
	fs.BoolVar(&s.insecure, "insecure", false, "run without TLS and gossip encryption: anyone who reaches the ports can forge raft commands")
	fs.BoolVar(&s.httpTLS, "http-tls", true, "with certificates, serve -http over HTTPS requiring a client certificate of the CA; false: plain HTTP")
}

// resolve fills the file paths from -certs for node and checks the
// combination: certificates or -insecure, not both, not neither.
func (s secOptions) resolve(node string) (secOptions, error) {
	if s.certs != "" {
		def := func(p *string, name string) {
			if *p == "" {
				*p = filepath.Join(s.certs, name)
			}
		}
		def(&s.ca, "ca.pem")
		def(&s.cert, node+".pem")
		def(&s.key, node+"-key.pem")
		if s.gossipKey == "" {
			p := filepath.Join(s.certs, "gossip.key")
			if _, err := os.Stat(p); err == nil {
				s.gossipKey = p
			} else if !errors.Is(err, fs.ErrNotExist) {
				return s, fmt.Errorf("-certs: %w", err)
			}
		}
	}
	some := s.ca != "" || s.cert != "" || s.key != ""
	switch {
	case s.insecure && (some || s.gossipKey != ""):
		return s, errors.New("-insecure with certificates or a gossip key: choose one")
	case s.insecure:
		return s, nil
	case !some:
		return s, errNoCerts
	case s.ca == "" || s.cert == "" || s.key == "":
		return s, errors.New("-ca, -cert and -key go together (or give -certs)")
	}
	return s, nil
}

// apply sets cfg's TLS, GossipKeys and Insecure.
func (s secOptions) apply(cfg *coordinator.Config) error {
	cfg.Insecure = s.insecure
	if s.insecure {
		return nil
	}
	cfg.TLS = &coordinator.TLSConfig{CAFile: s.ca, CertFile: s.cert, KeyFile: s.key, RequireTLS: true}
	if s.gossipKey != "" {
		k, err := certs.ReadGossipKeyFile(s.gossipKey)
		if err != nil {
			return fmt.Errorf("-gossip-key: %w", err)
		}
		cfg.Gossip.Keys = [][]byte{k}
	}
	return nil
}

// serverTLS returns the HTTPS configuration of -http: the node's
// certificate, and a client certificate signed by the CA required; nil
// when -http is plain HTTP. Each handshake checks whether the files
// changed and, if they did and still load,
// uses the new certificate and CA; files that do not load leave the
// previous ones in use.
func (s secOptions) serverTLS() (*tls.Config, error) {
	if s.insecure || !s.httpTLS {
		return nil, nil
	}
	h := &httpsFiles{files: [3]string{s.cert, s.key, s.ca}}
	cfg, err := h.load()
	if err != nil {
		return nil, fmt.Errorf("-http TLS: %w", err)
	}
	h.cur.Store(cfg)
	return &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: h.forHandshake}, nil
}

// httpsFiles is the HTTPS certificate, key and CA files and the
// configuration last loaded from them.
type httpsFiles struct {
	files [3]string // certificate, key, CA
	mu    sync.Mutex
	stamp [3]string // the files' contents when cur was loaded
	cur   atomic.Pointer[tls.Config]
}

// stamps returns the files' contents (nil for one that cannot be read):
// a few kilobytes, read on each handshake of an admin endpoint.
func (h *httpsFiles) stamps() [3]string {
	var out [3]string
	for i, f := range h.files {
		b, _ := os.ReadFile(f)
		out[i] = string(b)
	}
	return out
}

// load reads the files into a server configuration.
func (h *httpsFiles) load() (*tls.Config, error) {
	stamp := h.stamps()
	pair, err := tls.LoadX509KeyPair(h.files[0], h.files[1])
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(h.files[2])
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no PEM certificate", h.files[2])
	}
	h.stamp = stamp
	return &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// forHandshake returns the configuration for one handshake, reloaded
// first when the files changed.
func (h *httpsFiles) forHandshake(*tls.ClientHelloInfo) (*tls.Config, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.stamps(); st != h.stamp {
		if cfg, err := h.load(); err == nil {
			h.cur.Store(cfg)
		} else {
			h.stamp = st // tried: wait for the next change
		}
	}
	return h.cur.Load(), nil
}

// authorizeActions is who may act on the cluster through the node's admin
// endpoint (holdfastctl leave, drain, lease release, raft step-down and
// remove-peer): over HTTPS, a client with a certificate of the
// cluster's CA, as every admin request already needs; with -insecure (no
// authentication anywhere), a client on this machine only; with
// certificates but -http-tls=false, nobody.
func (s secOptions) authorizeActions(https bool) func(*http.Request) error {
	switch {
	case https:
		return admin.RequireClientCertificate
	case s.insecure:
		return admin.LoopbackOnly
	}
	return func(*http.Request) error {
		return errors.New("-http-tls=false serves plain HTTP, where no client certificate can be checked: actions are off")
	}
}
