package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
)

// The errors of a wrong address or of missing TLS flags say which flag to
// pass, not only what the HTTP client saw: "Client sent an HTTP request to
// an HTTPS server" means "give -ca, -cert and -key"; a connection the
// other end closes without an HTTP answer means "this is not the admin
// port".

// reachError is a request that got no HTTP answer; err is the client's.
type reachError struct {
	msg error
	err error
}

func (e *reachError) Error() string { return e.msg.Error() }
func (e *reachError) Unwrap() error { return e.err }

// isPlainHTTP reports whether err is a TLS client meeting a plain-HTTP
// server.
func isPlainHTTP(err error) bool {
	return err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// certFlags names the flags that give holdfastctl its certificates.
const certFlags = "-ca, -cert and -key (holdfastctl cert create-client writes client.pem and client-key.pem beside " +
	"cert create-ca's ca.pem), or -certs DIR with those files"

// statusHint explains an error answer that means a flag is missing, or
// returns "".
func statusHint(t target, code int, body []byte) string {
	if code == 400 && strings.Contains(string(body), "Client sent an HTTP request to an HTTPS server") {
		return fmt.Sprintf("%s serves HTTPS with client certificates: give %s", t.name, certFlags)
	}
	return ""
}

// reachHint explains a failed request in terms of the flags, as a suffix
// (": ..."), or returns "".
func reachHint(t target, err error) string {
	var unknownCA x509.UnknownAuthorityError
	var badName x509.HostnameError
	msg := err.Error()
	switch {
	case isPlainHTTP(err):
		return fmt.Sprintf(": %s serves plain HTTP: give -addr http://%s, without the TLS flags", t.name, hostOf(t))
	case strings.Contains(msg, "tls: certificate required"):
		return ": the node requires a client certificate: give -cert and -key (holdfastctl cert create-client), or -certs DIR"
	case errors.As(err, &unknownCA):
		return ": the node's certificate is not signed by a CA holdfastctl trusts: give -ca with the cluster's ca.pem (or -certs DIR)"
	case errors.As(err, &badName):
		return ": give -server-name with the node's name (its certificate names the node and the -addr given to cert create-node)"
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), strings.Contains(msg, "malformed HTTP response"),
		strings.Contains(msg, "first record does not look like a TLS handshake"), strings.Contains(msg, "tls: bad certificate"):
		return fmt.Sprintf(": %s answered, but not as an admin endpoint: is it the node's raft/RPC or gossip port? "+
			"Give the HTTP address (the ledger prints it as http= on its listening line)", t.name)
	}
	return ""
}

// hostOf is t's host:port, without scheme and path.
func hostOf(t target) string {
	s := t.base
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	host, _, _ := strings.Cut(s, "/")
	return host
}
