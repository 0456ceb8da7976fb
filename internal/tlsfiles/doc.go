// Package tlsfiles loads a node's TLS material (CA, certificate, key) from
// PEM bytes or files, checks it, and follows the files so that a renewed
// certificate is used without a restart.
//
// Load checks what a node needs for mutual TLS: every file readable, every
// PEM well formed, the key matching the certificate, the certificate
// signed by the CA, valid for server and client auth and naming the node.
// Its errors name the configuration field at fault (FieldError).
//
// A Reloader remembers the files' contents as they were loaded. Check
// reads them again; when they changed, it loads and checks them as Load
// does and installs the result on its Target, or, when they fail the
// checks, logs and counts the failure and leaves the Target's certificate
// in place. Start runs Check periodically in a goroutine that Stop ends
// and joins. Metrics are the reload counters, a collector the caller
// registers.
package tlsfiles
