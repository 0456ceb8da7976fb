package tlsfiles

import (
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// DefaultInterval is how often the files are checked for changes when the
// configured reload interval is zero.
const DefaultInterval = 10 * time.Second

// Check validates a node's TLS configuration before anything starts: s
// nil means no TLS, refused unless insecure; otherwise the material must
// pass Load. Its errors are *FieldError.
func Check(s *Source, insecure bool, nodeName string) error {
	if s == nil {
		if insecure {
			return nil
		}
		return fieldErr("TLS", "is nil: holdfast refuses to run its RPC/raft port in plaintext, where anyone who reaches it "+
			"can forge raft commands. Make certificates with `holdfastctl cert create-ca` and "+
			"`holdfastctl cert create-node NAME -addr HOST` and set Config.TLS, or set Config.Insecure = true "+
			"to run without TLS (tests and demos only)")
	}
	_, err := Load(*s, nodeName)
	return err
}

// Transport starts the listener carrying raft and RPC as tc says, with
// mutual TLS over o's material when o is not nil: the material is loaded
// again (the files may have changed since Check) and the returned Reloader
// follows the files; the caller starts it once the transport serves, and
// stops it. peerName is the transport's TLS.PeerName. Load's errors are
// *FieldError; a listener that cannot start is an error of "RPCAddr".
func Transport(tc transport.Config, o *Options, peerName func(addr, id string) (string, bool)) (*transport.Transport, *Reloader, error) {
	var r *Reloader
	if o != nil {
		var m *Material
		var err error
		if r, m, err = New(*o); err != nil {
			return nil, nil, err
		}
		tc.TLS = &transport.TLS{NodeName: o.NodeName, Certificate: m.Cert, CAs: m.CAs,
			Required: o.Source.RequireTLS, PeerName: peerName}
	}
	t, err := transport.New(tc)
	if err != nil {
		return nil, nil, fmt.Errorf("holdfast: RPCAddr: %w", err)
	}
	return t, r, nil
}

// PeerName names the node that gossip places at a raft or RPC address:
// among members, the one with raft ID id when there is one, else the one
// advertising addr as its RPC address (an alive one before others). It
// reports false for an address no member advertises.
func PeerName(members []membership.Member, addr, id string) (string, bool) {
	name, found := "", false
	for _, mem := range members {
		switch {
		case id != "" && mem.Meta.NodeID == id:
			return mem.Name, true
		case mem.Meta.RPCAddr == addr && (!found || mem.State == membership.Alive):
			name, found = mem.Name, true
		}
	}
	return name, found
}
