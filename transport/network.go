package transport

import (
	"context"
	"net"

	"github.com/hashicorp/memberlist"
)

// Network is how a node listens for and dials stream connections. The
// coordinator uses one Network for the raft stream layer and for RPC, so the
// same code runs on real TCP and on the in-memory network of package memnet.
//
// Implementations must be safe for concurrent use.
type Network interface {
	// Listen opens a listener on addr ("host:port"; port 0 picks a free
	// port where the implementation supports it).
	Listen(addr string) (net.Listener, error)
	// DialContext connects to addr; it gives up when ctx ends.
	DialContext(ctx context.Context, addr string) (net.Conn, error)
}

// GossipNetwork is an optional capability of a Network: it also carries
// gossip (memberlist) traffic. The coordinator uses it, when present, instead
// of memberlist's own UDP/TCP transport, so that faults injected into an
// in-memory network reach gossip as well.
type GossipNetwork interface {
	// GossipTransport returns a memberlist transport bound to bindAddr.
	GossipTransport(bindAddr string) (memberlist.NodeAwareTransport, error)
}

// tcpNetwork is the Network of real TCP sockets.
type tcpNetwork struct{}

// TCP returns the Network of real TCP sockets.
func TCP() Network { return tcpNetwork{} }

func (tcpNetwork) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func (tcpNetwork) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}
