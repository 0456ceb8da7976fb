package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// checkFiles reports a certificate or key file that cannot be read in the
// words of what is missing and how to make it (holdfastctl cert), before
// anything else reads them: the HTTPS listener would otherwise report it as
// an HTTP problem ("-http TLS: open certs/n1.pem: ...").
func (s secOptions) checkFiles(node string) error {
	if s.insecure {
		return nil
	}
	dir := s.certs
	if dir == "" {
		dir = filepath.Dir(s.cert)
	}
	for _, f := range []struct{ flag, path, what, make string }{
		{"-ca", s.ca, "the cluster's CA certificate", fmt.Sprintf("holdfastctl cert create-ca -dir %s (once per cluster)", dir)},
		{"-cert", s.cert, "this node's certificate", fmt.Sprintf("holdfastctl cert create-node -dir %s -addr HOST %s", dir, node)},
		{"-key", s.key, "this node's private key", fmt.Sprintf("holdfastctl cert create-node -dir %s -addr HOST %s", dir, node)},
	} {
		if _, err := os.Stat(f.path); err != nil {
			from := f.flag
			if s.certs != "" {
				from = "-certs " + s.certs
			}
			return fmt.Errorf("%s %s (%s) cannot be read: %v; make it with %s", f.what, f.path, from, unwrapPath(err), f.make)
		}
	}
	return nil
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
