package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"time"
)

// Request describes a certificate for Issue.
type Request struct {
	// Name is the certificate's common name and, for a node, its first DNS
	// subject alternative name: the node name holdfast checks.
	Name string
	// DNSNames are more DNS SANs for a node (host names its admin HTTP or
	// RPC port is reached at).
	DNSNames []string
	// IPs are IP SANs for a node (addresses its admin HTTP port is reached
	// at, so an HTTPS client can verify it by address).
	IPs []net.IP
	// Client makes a client-only certificate, for a tool such as
	// holdfastctl: extended key usage client auth only and no SANs at all,
	// so it can neither serve nor pass for a node on the RPC port (which
	// requires the certificate to name the node).
	Client bool
	// Validity is how long the certificate is valid; 0 means Validity.
	Validity time.Duration
}

// Issue creates the certificate r describes, signed by the CA, with a new
// ECDSA P-256 key, both PEM-encoded (the key as PKCS #8, "PRIVATE KEY").
// A node certificate (r.Client false) has the DNS SANs Name and DNSNames
// and the IP SANs IPs, and is valid for server and client authentication.
// It fails for an empty Name, a negative Validity, and, for a node, a Name
// that is not ASCII (a DNS SAN must be).
func (ca *CA) Issue(r Request) (certPEM, keyPEM []byte, err error) {
	switch {
	case r.Name == "":
		return nil, nil, errors.New("certs: empty name")
	case r.Validity < 0:
		return nil, nil, fmt.Errorf("certs: validity %v; must not be negative", r.Validity)
	case r.Client && (len(r.DNSNames) > 0 || len(r.IPs) > 0):
		return nil, nil, errors.New("certs: a client certificate has no subject alternative names")
	}
	if r.Validity == 0 {
		r.Validity = Validity
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: key for %q: %w", r.Name, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: r.Name, Organization: []string{"holdfast"}},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(r.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if !r.Client {
		tmpl.DNSNames = append([]string{r.Name}, r.DNSNames...)
		tmpl.IPAddresses = r.IPs
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: create certificate for %q: %w", r.Name, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: encode key for %q: %w", r.Name, err)
	}
	return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER), nil
}

// KeyPEM returns the CA's private key, PEM-encoded (PKCS #8): what signs
// certificates. Keep it off the nodes.
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil, fmt.Errorf("certs: encode CA key: %w", err)
	}
	return pemBlock("PRIVATE KEY", der), nil
}

// LoadCA returns the CA whose certificate and private key are certPEM and
// keyPEM (as CertPEM and KeyPEM write them). It fails unless the
// certificate is a CA certificate and the key is an ECDSA key matching it.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate and key: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("certs: the certificate is not a CA certificate")
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("certs: CA key is a %T, not ECDSA", pair.PrivateKey)
	}
	return &CA{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", pair.Certificate[0])}, nil
}

// NotAfter returns when the CA certificate expires.
func (ca *CA) NotAfter() time.Time { return ca.cert.NotAfter }
