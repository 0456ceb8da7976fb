package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

// Source says where the TLS material comes from: each of the CA, the
// certificate and the key as PEM bytes or as a file path; when both are
// set, the PEM bytes win. It is the facade's Config.TLS (TLSConfig
// mirrors it field for field and converts to it).
type Source struct {
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
	// means DefaultInterval, negative turns reloading off. (The facade
	// hands it to Options.Interval.)
	ReloadInterval time.Duration
	// RequireTLS refuses plaintext, inbound and outbound. False accepts
	// plaintext peers and falls back to plaintext towards them: only for
	// migrating a running cluster, as it lets anyone reach the node.
	RequireTLS bool
}

// Material is a Source loaded and checked.
type Material struct {
	// CAs are the certificates peers' certificates must chain to.
	CAs *x509.CertPool
	// Cert is this node's certificate (with any intermediates) and key.
	Cert tls.Certificate
}

// FieldError is a configuration error: Msg says what is wrong with the
// configuration field Field (TLS.CAFile, TLS.CertPEM...). The caller wraps
// it in its own configuration error.
type FieldError struct {
	Field, Msg string
}

// Error returns "Field: Msg".
func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// ConfigField returns the field at fault and what is wrong with it.
func (e *FieldError) ConfigField() (field, msg string) { return e.Field, e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// readPEM returns the PEM bytes and the name of the field they came from:
// pemField when b is set, else the file's content. ok is false when
// neither is set.
func readPEM(b []byte, file, pemField, fileField string) (data []byte, field string, ok bool, err error) {
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

// Load reads and checks the material for node nodeName: every file
// readable, every PEM well formed, the key matching the certificate, the
// certificate signed by the CA, valid for server and client auth, and
// naming nodeName as a DNS subject alternative name. Its errors are
// *FieldError naming the field at fault.
func Load(s Source, nodeName string) (*Material, error) {
	if s.RequireTLS && len(s.CertPEM) == 0 && s.CertFile == "" && len(s.KeyPEM) == 0 && s.KeyFile == "" {
		return nil, fieldErr("TLS.RequireTLS", "is set but no certificate is configured (TLS.CertFile or TLS.CertPEM, TLS.KeyFile or TLS.KeyPEM)")
	}
	caPEM, caField, ok, err := readPEM(s.CAPEM, s.CAFile, "TLS.CAPEM", "TLS.CAFile")
	if err != nil {
		return nil, err
	} else if !ok {
		return nil, fieldErr("TLS.CAFile", "must be set (or TLS.CAPEM): peers are verified against the CA")
	}
	cas, err := parseCerts(caPEM)
	if err != nil {
		return nil, fieldErr(caField, "%v", err)
	}
	certPEM, certField, ok, err := readPEM(s.CertPEM, s.CertFile, "TLS.CertPEM", "TLS.CertFile")
	if err != nil {
		return nil, err
	} else if !ok {
		return nil, fieldErr("TLS.CertFile", "must be set (or TLS.CertPEM): every node presents a certificate")
	}
	chain, err := parseCerts(certPEM)
	if err != nil {
		return nil, fieldErr(certField, "%v", err)
	}
	keyPEM, keyField, ok, err := readPEM(s.KeyPEM, s.KeyFile, "TLS.KeyPEM", "TLS.KeyFile")
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
	return &Material{CAs: pool, Cert: pair}, nil
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
