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
	"  Make them once per cluster:   holdfastctl cert create-ca -dir certs\n" +
	"  and once per node:            holdfastctl cert create-node -dir certs -addr HOST NAME\n" +
	"  then start with -certs certs (or -ca, -cert and -key), or with -insecure to run without TLS (one machine, a try)")

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
		cfg.GossipKeys = [][]byte{k}
	}
	return nil
}

// serverTLS returns the HTTPS configuration of -http: the node's
// certificate, and a client certificate signed by the CA required; nil
// when -http is plain HTTP.
func (s secOptions) serverTLS() (*tls.Config, error) {
	if s.insecure || !s.httpTLS {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(s.cert, s.key)
	if err != nil {
		return nil, fmt.Errorf("-http TLS: %w", err)
	}
	caPEM, err := os.ReadFile(s.ca)
	if err != nil {
		return nil, fmt.Errorf("-http TLS: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("-http TLS: %s holds no PEM certificate", s.ca)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
