package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/certs"
)

// File names the cert commands write in -dir, and that the ledger's -certs
// reads.
const (
	caCertFile     = "ca.pem"
	caKeyFile      = "ca-key.pem"
	gossipKeyFile  = "gossip.key"
	clientCertFile = "client.pem"
	clientKeyFile  = "client-key.pem"
)

// Default validities: the CA outlives the certificates it signs.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
)

// certUsage is printed for a bad cert command line and for cert -h.
const certUsage = `usage:
  holdfastctl cert create-ca     [-dir DIR] [-force] [-name CN] [-validity D]
  holdfastctl cert create-node   [-dir DIR] [-force] [-addr HOST,...] [-validity D] NAME
  holdfastctl cert create-client [-dir DIR] [-force] [-name CN] [-validity D]

create-ca      a new cluster CA: DIR/ca.pem (the CA certificate, for every node),
               DIR/ca-key.pem (its private key: keep it off the nodes) and
               DIR/gossip.key (the cluster's gossip encryption key, for every node)
create-node    a certificate for node NAME signed by DIR's CA: DIR/NAME.pem and
               DIR/NAME-key.pem; its SANs are NAME and every -addr (host names as
               DNS SANs, IP addresses as IP SANs: what HTTPS clients dial)
create-client  a client certificate for holdfastctl: DIR/client.pem and
               DIR/client-key.pem (client auth only; it cannot act as a node)

DIR is ` + shownCertDir + ` unless -dir is given: outside any source tree, and
where holdfastctl looks for ca.pem, client.pem and client-key.pem.
Existing files are never replaced unless -force is given. Key files are
written with mode 0600.
`

// certOptions are the flags of the cert commands.
type certOptions struct {
	dir, name string
	addrs     []string
	force     bool
	validity  time.Duration
}

// runCert runs `holdfastctl cert ...` and returns the exit status.
func runCert(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		w, code := stderr, 2
		if len(args) > 0 {
			w, code = stdout, 0
		} else {
			fmt.Fprintln(stderr, "holdfastctl: cert: missing subcommand")
		}
		fmt.Fprint(w, certUsage)
		return code
	}
	sub := args[0]
	o, rest, err := parseCertFlags(sub, args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, certUsage)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "holdfastctl: cert %s: %v\n", sub, err)
		fmt.Fprint(stderr, certUsage)
		return 2
	}
	var files []written
	switch {
	case sub == "create-ca" && len(rest) == 0:
		files, err = createCA(o)
	case sub == "create-node" && len(rest) == 1:
		files, err = createNode(o, rest[0])
	case sub == "create-client" && len(rest) == 0:
		files, err = createClient(o)
	default:
		fmt.Fprintf(stderr, "holdfastctl: cert %s: unknown subcommand or wrong arguments %q\n", sub, rest)
		fmt.Fprint(stderr, certUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "holdfastctl: cert %s: %v\n", sub, err)
		return 1
	}
	for _, f := range files {
		fmt.Fprintf(stdout, "wrote %-28s %s\n", f.path, f.what)
	}
	return 0
}

// parseCertFlags parses flags before and after the positional arguments.
func parseCertFlags(sub string, args []string) (certOptions, []string, error) {
	o := certOptions{validity: leafValidity}
	if sub == "create-ca" {
		o.validity = caValidity
	}
	fs := flag.NewFlagSet("holdfastctl cert "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.dir, "dir", "", "directory of the files, created if missing (default "+shownCertDir+": outside any source tree)")
	fs.BoolVar(&o.force, "force", false, "replace existing files")
	fs.StringVar(&o.name, "name", "", "common name (create-ca: holdfast CA; create-client: holdfastctl)")
	fs.DurationVar(&o.validity, "validity", o.validity, "how long the certificate is valid")
	fs.Func("addr", "host name or IP address the node is reached at; comma-separated, repeatable (create-node)", func(s string) error {
		for _, a := range strings.Split(s, ",") {
			if a = strings.TrimSpace(a); a != "" {
				o.addrs = append(o.addrs, a)
			}
		}
		return nil
	})
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return o, nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if o.validity <= 0 {
		return o, nil, fmt.Errorf("-validity is %v; must be positive", o.validity)
	}
	if o.dir == "" {
		if o.dir = defaultCertDir(); o.dir == "" {
			return o, nil, errors.New("no home directory to hold " + shownCertDir + ": give -dir")
		}
	}
	if len(o.addrs) > 0 && sub != "create-node" {
		return o, nil, errors.New("-addr applies to create-node only")
	}
	return o, rest, nil
}

// written is one file a command wrote, and what it is for.
type written struct{ path, what string }

// output is a file to write.
type output struct {
	name, what string
	data       []byte
	mode       os.FileMode
}

// writeAll writes outs into dir, creating dir; unless force, it first
// checks that none of them exists, so it writes all or nothing.
func writeAll(dir string, force bool, outs []output) ([]written, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if !force {
		for _, o := range outs {
			p := filepath.Join(dir, o.name)
			if _, err := os.Lstat(p); err == nil {
				return nil, fmt.Errorf("%s exists; not replacing it (use -force to)", p)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
	}
	var done []written
	for _, o := range outs {
		p := filepath.Join(dir, o.name)
		flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
		if force {
			flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		}
		f, err := os.OpenFile(p, flags, o.mode)
		if err != nil {
			return done, err
		}
		_, err = f.Write(o.data)
		if err == nil {
			err = f.Chmod(o.mode) // an existing file replaced with -force keeps its mode otherwise
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return done, fmt.Errorf("%s: %w", p, err)
		}
		done = append(done, written{p, o.what})
	}
	return done, nil
}

// createCA makes a CA and the cluster's gossip key.
func createCA(o certOptions) ([]written, error) {
	name := o.name
	if name == "" {
		name = "holdfast CA"
	}
	ca, err := certs.NewCAValid(name, o.validity)
	if err != nil {
		return nil, err
	}
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	_, gossip, err := certs.NewGossipKey()
	if err != nil {
		return nil, err
	}
	return writeAll(o.dir, o.force, []output{
		{caCertFile, "CA certificate: copy to every node (and holdfastctl -ca)", ca.CertPEM(), 0o644},
		{caKeyFile, "CA private key (0600): signs certificates; keep it off the nodes", keyPEM, 0o600},
		{gossipKeyFile, "gossip encryption key (0600): copy to every node", gossip, 0o600},
	})
}

// loadCA reads the CA that create-ca wrote in dir.
func loadCA(dir string) (*certs.CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, caCertFile))
	if err != nil {
		return nil, fmt.Errorf("%w (run holdfastctl cert create-ca first, or give -dir)", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, caKeyFile))
	if err != nil {
		return nil, fmt.Errorf("%w (the CA's private key is needed to sign)", err)
	}
	return certs.LoadCA(certPEM, keyPEM)
}

// createNode makes node name's certificate.
func createNode(o certOptions, name string) ([]written, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, "-") {
		return nil, fmt.Errorf("node name %q cannot be a file name", name)
	}
	if name == "ca" || name == "client" {
		return nil, fmt.Errorf("node name %q would clash with %s.pem", name, name)
	}
	ca, err := loadCA(o.dir)
	if err != nil {
		return nil, err
	}
	req := certs.Request{Name: name, Validity: o.validity}
	for _, a := range o.addrs {
		if h, _, err := net.SplitHostPort(a); err == nil {
			a = h
		}
		if ip := net.ParseIP(a); ip != nil {
			req.IPs = append(req.IPs, ip)
		} else {
			req.DNSNames = append(req.DNSNames, a)
		}
	}
	certPEM, keyPEM, err := ca.Issue(req)
	if err != nil {
		return nil, err
	}
	sans := append([]string{name}, o.addrs...)
	return writeAll(o.dir, o.force, []output{
		{name + ".pem", "certificate of node " + name + " (SANs " + strings.Join(sans, ", ") + ")", certPEM, 0o644},
		{name + "-key.pem", "its private key (0600): for node " + name + " only", keyPEM, 0o600},
	})
}

// createClient makes holdfastctl's client certificate.
func createClient(o certOptions) ([]written, error) {
	name := o.name
	if name == "" {
		name = "holdfastctl"
	}
	ca, err := loadCA(o.dir)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.Issue(certs.Request{Name: name, Client: true, Validity: o.validity})
	if err != nil {
		return nil, err
	}
	return writeAll(o.dir, o.force, []output{
		{clientCertFile, "client certificate for holdfastctl -cert", certPEM, 0o644},
		{clientKeyFile, "its private key (0600) for holdfastctl -key", keyPEM, 0o600},
	})
}
