package tlsfiles

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Target is what presents the certificate: *transport.Transport.
type Target interface {
	SetTLSCertificate(cert tls.Certificate, cas *x509.CertPool) error
}

// Options configure a Reloader.
type Options struct {
	// Source is where the material comes from; only its files are watched.
	Source Source
	// NodeName is the name the certificate must carry.
	NodeName string
	// Interval is how often Start's loop checks the files; 0 means
	// DefaultInterval, negative starts no loop (Check still works).
	Interval time.Duration
	// Log receives reloads and refused changes; nil discards.
	Log *slog.Logger
	// Metrics count reloads; nil counts into a private Metrics.
	Metrics *Metrics
}

// Reloader follows the TLS files (Source.CAFile, CertFile, KeyFile) and
// installs changed material on a Target for the handshakes that follow.
// Its loop is started by Start and ended and joined by Stop.
type Reloader struct {
	o Options

	mu   sync.Mutex
	last [3][]byte // the files' contents last loaded or tried

	runMu sync.Mutex
	stop  context.CancelFunc // nil until Start
	done  chan struct{}      // closed when the loop has returned
}

// New reads the files, then loads and checks the material (see Load): the
// Reloader treats as a change only what happens to the files after this
// read. Its error is Load's.
func New(o Options) (*Reloader, *Material, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = new(Metrics)
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	r := &Reloader{o: o, last: readFiles(o.Source)}
	m, err := Load(o.Source, o.NodeName)
	if err != nil {
		return nil, nil, err
	}
	return r, m, nil
}

// Watches reports whether any material comes from a file.
func (s Source) Watches() bool {
	return (len(s.CAPEM) == 0 && s.CAFile != "") || (len(s.CertPEM) == 0 && s.CertFile != "") ||
		(len(s.KeyPEM) == 0 && s.KeyFile != "")
}

// readFiles returns the contents of the files in use (nil for a field
// given as PEM bytes, not set, or unreadable).
func readFiles(s Source) [3][]byte {
	var out [3][]byte
	for i, f := range []struct {
		pem  []byte
		file string
	}{{s.CAPEM, s.CAFile}, {s.CertPEM, s.CertFile}, {s.KeyPEM, s.KeyFile}} {
		if len(f.pem) == 0 && f.file != "" {
			out[i], _ = os.ReadFile(f.file)
		}
	}
	return out
}

// Check looks at the files once. When they changed since they were last
// loaded or tried, it loads and checks them as New does and, if they pass,
// installs the new certificate (and CAs) on t: changed is true and err
// nil. A change that fails (a half-written file, a key that does not
// match, a certificate of another CA, t refusing it) is logged, counted,
// and returned; t keeps its current certificate, and the same contents
// are not tried again. Unchanged files return false, nil.
func (r *Reloader) Check(t Target) (changed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	files := readFiles(r.o.Source)
	if sameFiles(files, r.last) {
		return false, nil
	}
	r.last = files
	m, err := Load(r.o.Source, r.o.NodeName)
	if err == nil {
		err = t.SetTLSCertificate(m.Cert, m.CAs)
	}
	if err != nil {
		r.o.Metrics.fail.Add(1)
		r.o.Log.Error("TLS files changed but cannot be used; keeping the current certificate", "error", err)
		return true, err
	}
	r.o.Metrics.ok.Add(1)
	if leaf, _ := x509.ParseCertificate(m.Cert.Certificate[0]); leaf != nil {
		r.o.Log.Info("TLS certificate reloaded", "serial", leaf.SerialNumber.String(), "not_after", leaf.NotAfter.UTC())
	}
	return true, nil
}

// Start runs the loop that calls Check(t) every Interval, when some
// material comes from a file and Interval > 0; otherwise it does nothing.
// Call it at most once; Stop ends the loop. A nil Reloader does nothing.
func (r *Reloader) Start(t Target) {
	if r == nil || !r.o.Source.Watches() || r.o.Interval <= 0 {
		return
	}
	r.runMu.Lock()
	defer r.runMu.Unlock()
	if r.stop != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop, r.done = cancel, make(chan struct{})
	go r.loop(ctx, t)
}

// Stop ends the loop Start began and waits for it to return. It is safe
// to call more than once, without Start, and on a nil Reloader.
func (r *Reloader) Stop() {
	if r == nil {
		return
	}
	r.runMu.Lock()
	stop, done := r.stop, r.done
	r.runMu.Unlock()
	if stop == nil {
		return
	}
	stop()
	<-done
}

func (r *Reloader) loop(ctx context.Context, t Target) {
	defer close(r.done)
	tick := time.NewTicker(r.o.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		_, _ = r.Check(t) // logged and counted by Check
	}
}

func sameFiles(a, b [3][]byte) bool {
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
