// TLS configuration errors: bad files, PEM, keys and certificates
// refused by New with ErrInvalidConfig naming the field.

package coordinator_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/certs"
	"github.com/holdfast-go/holdfast/coordinator"
)

// pemFile writes b to a new file in dir and returns its path.
func pemFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// serverOnlyCert returns a CA and a certificate for name it signed that
// allows server auth only.
func serverOnlyCert(t *testing.T, name string) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "server-only CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	return enc("CERTIFICATE", caDER), enc("CERTIFICATE", leafDER), enc("PRIVATE KEY", keyDER)
}

// tlsConfigCase is one TLS setting TestTLSConfigErrors gives New: valid
// when field is "", else refused with an ErrInvalidConfig naming field and
// containing detail.
type tlsConfigCase struct {
	name, field, detail string // field "" means valid
	tls                 *coordinator.TLSConfig
}

// tlsConfigCases makes a CA, another CA, certificate files in a temporary
// directory and PEM blocks for node "n", and returns the cases of
// TestTLSConfigErrors built from them.
func tlsConfigCases(t *testing.T) []tlsConfigCase {
	t.Helper()
	ca, err := certs.NewCA("cluster CA")
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.NewCA("other CA")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := ca.WriteFiles(dir, "n")
	if err != nil {
		t.Fatal(err)
	}
	nCert, nKey, _ := ca.NodeCert("n")
	_, strangerKey, _ := ca.NodeCert("n")
	foreignCert, foreignKey, _ := other.NodeCert("n")
	wrongCert, wrongKey, _ := ca.NodeCert("m")
	soCA, soCert, soKey := serverOnlyCert(t, "n")
	garbage := pemFile(t, dir, "garbage.pem", []byte("not PEM at all"))
	missing := filepath.Join(dir, "missing.pem")
	pemCfg := func() *coordinator.TLSConfig {
		return &coordinator.TLSConfig{CAPEM: ca.CertPEM(), CertPEM: nCert, KeyPEM: nKey, RequireTLS: true}
	}
	fileCfg := func() *coordinator.TLSConfig {
		return &coordinator.TLSConfig{CAFile: files.CAFile, CertFile: files.CertFile, KeyFile: files.KeyFile, RequireTLS: true}
	}
	return []tlsConfigCase{
		{"files", "", "", fileCfg()},
		{"PEM", "", "", pemCfg()},
		{"PEM wins over files", "", "", func() *coordinator.TLSConfig {
			c := pemCfg()
			c.CAFile, c.CertFile, c.KeyFile = missing, garbage, missing
			return c
		}()},
		{"CA file unreadable", "TLS.CAFile", "cannot be read", func() *coordinator.TLSConfig { c := fileCfg(); c.CAFile = missing; return c }()},
		{"cert file unreadable", "TLS.CertFile", "cannot be read", func() *coordinator.TLSConfig { c := fileCfg(); c.CertFile = missing; return c }()},
		{"key file unreadable", "TLS.KeyFile", "cannot be read", func() *coordinator.TLSConfig { c := fileCfg(); c.KeyFile = missing; return c }()},
		{"CA file not PEM", "TLS.CAFile", "no PEM certificate", func() *coordinator.TLSConfig { c := fileCfg(); c.CAFile = garbage; return c }()},
		{"cert file not PEM", "TLS.CertFile", "no PEM certificate", func() *coordinator.TLSConfig { c := fileCfg(); c.CertFile = garbage; return c }()},
		{"key file not PEM", "TLS.KeyFile", "", func() *coordinator.TLSConfig { c := fileCfg(); c.KeyFile = garbage; return c }()},
		{"CA PEM bad", "TLS.CAPEM", "no PEM certificate", func() *coordinator.TLSConfig { c := pemCfg(); c.CAPEM = []byte("x"); return c }()},
		{"cert PEM bad", "TLS.CertPEM", "", func() *coordinator.TLSConfig { c := pemCfg(); c.CertPEM = nKey; return c }()},
		{"key of another certificate", "TLS.KeyPEM", "private key does not match", func() *coordinator.TLSConfig { c := pemCfg(); c.KeyPEM = strangerKey; return c }()},
		{"certificate of another CA", "TLS.CertPEM", "mismatched CA", func() *coordinator.TLSConfig {
			c := pemCfg()
			c.CertPEM, c.KeyPEM = foreignCert, foreignKey
			return c
		}()},
		{"certificate naming another node", "TLS.CertPEM", "must name the node", func() *coordinator.TLSConfig {
			c := pemCfg()
			c.CertPEM, c.KeyPEM = wrongCert, wrongKey
			return c
		}()},
		{"certificate for server auth only", "TLS.CertPEM", "server and client auth", &coordinator.TLSConfig{CAPEM: soCA, CertPEM: soCert, KeyPEM: soKey}},
		{"RequireTLS without certificates", "TLS.RequireTLS", "no certificate", &coordinator.TLSConfig{CAPEM: ca.CertPEM(), RequireTLS: true}},
		{"no CA", "TLS.CAFile", "must be set", &coordinator.TLSConfig{CertPEM: nCert, KeyPEM: nKey}},
		{"no certificate", "TLS.CertFile", "must be set", &coordinator.TLSConfig{CAPEM: ca.CertPEM(), KeyPEM: nKey}},
		{"no key", "TLS.KeyFile", "must be set", &coordinator.TLSConfig{CAPEM: ca.CertPEM(), CertPEM: nCert}},
	}
}

func TestTLSConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range tlsConfigCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			cfg := coordinator.DefaultLocalConfig()
			cfg.NodeName, cfg.DataDir, cfg.TLS = "n", t.TempDir(), tc.tls
			c, err := coordinator.New(cfg)
			if c != nil {
				_ = c.Close()
			}
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.field == "":
			case !errors.Is(err, coordinator.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+":") ||
				!strings.Contains(err.Error(), tc.detail):
				t.Fatalf("New = %v; want an ErrInvalidConfig naming %s (%q)", err, tc.field, tc.detail)
			}
		})
	}
}
