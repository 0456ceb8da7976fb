package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Validity is how long certificates made by this package are valid, counted
// from their creation. They are also valid from backdate before creation,
// so a peer whose clock is a little behind accepts them.
const Validity = 30 * 24 * time.Hour

// backdate is how far before its creation a certificate becomes valid.
const backdate = time.Hour

// CA is a throwaway certificate authority that signs node certificates. Its
// methods are safe for concurrent use.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

// NewCA creates a self-signed certificate authority named commonName with a
// new ECDSA P-256 key, valid for Validity. It can sign leaf certificates
// only (path length 0).
func NewCA(commonName string) (*CA, error) { return NewCAValid(commonName, Validity) }

// NewCAValid is NewCA with a validity of its own: the CA certificate is
// valid from a little before its creation for validity.
func NewCAValid(commonName string, validity time.Duration) (*CA, error) {
	if commonName == "" {
		return nil, errors.New("certs: empty CA common name")
	}
	if validity <= 0 {
		return nil, fmt.Errorf("certs: validity %v; must be positive", validity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"holdfast"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("certs: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parse CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der)}, nil
}

// CertPEM returns the CA certificate, PEM-encoded: what peers need to
// verify the node certificates this CA signs. The caller may modify the
// returned slice.
func (ca *CA) CertPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// Pool returns a new certificate pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// NodeCert creates a certificate for nodeName signed by the CA, with a new
// ECDSA P-256 key, both PEM-encoded (the key as PKCS #8, "PRIVATE KEY"). The
// certificate's only subject alternative name is the DNS name nodeName (also
// its common name), it is valid for server and client authentication, for
// Validity. It fails for an empty nodeName or one that is not ASCII (a DNS
// SAN must be). Issue makes certificates with more names.
func (ca *CA) NodeCert(nodeName string) (certPEM, keyPEM []byte, err error) {
	return ca.Issue(Request{Name: nodeName})
}

// Files are the paths WriteFiles wrote.
type Files struct {
	// CAFile holds the CA certificate (PEM).
	CAFile string
	// CertFile holds the node certificate (PEM).
	CertFile string
	// KeyFile holds the node's private key (PEM, PKCS #8), mode 0600.
	KeyFile string
}

// WriteFiles creates a certificate for nodeName (as NodeCert does) and
// writes it, its key and the CA certificate into dir (which must exist) as
// ca.pem, <nodeName>.pem and <nodeName>-key.pem, replacing existing files.
// The key file is readable by its owner only. nodeName must be usable as a
// file name: no path separator, not "." or "..".
func (ca *CA) WriteFiles(dir, nodeName string) (Files, error) {
	if nodeName == "" || nodeName == "." || nodeName == ".." || strings.ContainsAny(nodeName, `/\`) {
		return Files{}, fmt.Errorf("certs: node name %q cannot be a file name", nodeName)
	}
	certPEM, keyPEM, err := ca.NodeCert(nodeName)
	if err != nil {
		return Files{}, err
	}
	f := Files{
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, nodeName+".pem"),
		KeyFile:  filepath.Join(dir, nodeName+"-key.pem"),
	}
	for _, w := range []struct {
		path string
		b    []byte
		mode os.FileMode
	}{{f.CAFile, ca.certPEM, 0o644}, {f.CertFile, certPEM, 0o644}, {f.KeyFile, keyPEM, 0o600}} {
		if err := os.WriteFile(w.path, w.b, w.mode); err != nil {
			return Files{}, fmt.Errorf("certs: %w", err)
		}
		if err := os.Chmod(w.path, w.mode); err != nil { // an existing file kept its mode
			return Files{}, fmt.Errorf("certs: %w", err)
		}
	}
	return f, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// newSerial returns a random positive 128-bit serial number.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("certs: serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}
