package memnet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// ErrClosed is returned by Listen, DialContext and GossipTransport after the
// Network has been closed.
var ErrClosed = errors.New("memnet: network closed")

// fakeIPPrefix is the range from which host names get the IPv4 addresses that
// memberlist advertises. Addresses in it never reach the real network.
const fakeIPPrefix = "127.77."

// retransmitDelay is the extra delay a stream chunk suffers each time the loss
// probability says it was lost (one TCP retransmission timeout).
const retransmitDelay = 200 * time.Millisecond

// link is a directed pair of hosts; "" in a delay rule means any host.
type link struct{ from, to string }

// delayRange is a uniform one-way delay.
type delayRange struct{ min, max time.Duration }

// Network is an in-memory network of hosts. It carries reliable streams
// (net.Conn) and best-effort packets (memberlist gossip) and injects faults
// into both: partitions, one-way drops, per-link delay, loss and whole-host
// pauses. The zero value is not usable; create one with New.
//
// All methods are safe for concurrent use.
type Network struct {
	mu      sync.Mutex
	rng     *rand.Rand
	closed  bool
	changed chan struct{} // closed and replaced whenever faults change

	aliases  map[string]string // fake IP -> host name
	ips      map[string]string // host name -> fake IP
	nextIP   int
	nextPort map[string]int

	listeners map[string]*listener        // "host:port" -> listener
	gossip    map[string]*gossipTransport // "host:port" -> transport
	conns     map[*conn]struct{}

	paused   map[string]bool
	isolated map[string]bool
	muted    map[string]bool // gossip (packets and gossip streams) dropped
	blocked  map[link]bool
	delays   map[link]delayRange
	loss     float64

	pending map[*pendingPacket]struct{} // delayed packet deliveries
	timers  sync.WaitGroup              // running delivery callbacks
}

// pendingPacket is a delayed packet delivery that Close can cancel.
type pendingPacket struct{ timer *time.Timer }

// New returns an empty Network whose random choices (delays, loss) are drawn
// from a generator seeded with seed. Goroutine scheduling still varies
// between runs, so a seed makes the fault schedule, not the whole run,
// reproducible.
func New(seed int64) *Network {
	return &Network{
		rng:       rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15)),
		changed:   make(chan struct{}),
		aliases:   make(map[string]string),
		ips:       make(map[string]string),
		nextPort:  make(map[string]int),
		listeners: make(map[string]*listener),
		gossip:    make(map[string]*gossipTransport),
		conns:     make(map[*conn]struct{}),
		paused:    make(map[string]bool),
		isolated:  make(map[string]bool),
		muted:     make(map[string]bool),
		blocked:   make(map[link]bool),
		delays:    make(map[link]delayRange),
		pending:   make(map[*pendingPacket]struct{}),
	}
}

// Node returns the view of the network from host: its DialContext dials from
// host, so that faults involving host apply. Node values are cheap; any
// number may exist for the same host.
func (n *Network) Node(host string) *Node {
	return &Node{net: n, host: host}
}

// Listen opens a stream listener on addr ("host:port"). Port 0 picks a free
// port on that host. It fails if the address is in use or the network is
// closed.
func (n *Network) Listen(addr string) (net.Listener, error) {
	l, err := n.listen(addr)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// DialContext connects to addr from an anonymous client host that no
// Partition, DropOneWay or Pause names; faults of the target host still apply.
// Use Node(host).DialContext to dial from a given host. See DialContext on
// Node for the blocking behaviour.
func (n *Network) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	return n.dial(ctx, "", addr)
}

// GossipTransport returns a memberlist transport bound to bindAddr
// ("host:port"; port 0 picks a free port). It holds both the packet port and
// a stream listener on that address. See the package documentation for how
// host names map to advertised IPs.
func (n *Network) GossipTransport(bindAddr string) (memberlist.NodeAwareTransport, error) {
	t, err := n.newGossipTransport(bindAddr)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// IPAddr returns addr with its host replaced by the IPv4 address that the
// host advertises to memberlist (the host itself if it already is an IP
// literal; otherwise a fake address in 127.77.0.0/16 assigned on first use).
// Give memberlist's Join these addresses: it cannot resolve bare host names.
func (n *Network) IPAddr(addr string) (string, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return "", err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return joinAddr(n.ipLocked(n.canonLocked(host)), port), nil
}

// Close closes every listener, connection and gossip transport of the
// network and waits for delayed packet deliveries to finish. Later Listen,
// DialContext and GossipTransport calls fail with ErrClosed. Close is
// idempotent.
func (n *Network) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	n.notifyLocked()
	var lns []*listener
	for _, l := range n.listeners {
		lns = append(lns, l)
	}
	var gts []*gossipTransport
	for _, g := range n.gossip {
		gts = append(gts, g)
	}
	var cs []*conn
	for c := range n.conns {
		cs = append(cs, c)
	}
	for p := range n.pending {
		if p.timer.Stop() {
			n.timers.Done()
		}
		delete(n.pending, p)
	}
	n.mu.Unlock()
	for _, g := range gts {
		_ = g.Shutdown()
	}
	for _, l := range lns {
		_ = l.Close()
	}
	for _, c := range cs {
		_ = c.Close()
	}
	n.timers.Wait()
}

// canonLocked maps a fake IP back to the host name it was assigned to.
func (n *Network) canonLocked(host string) string {
	if name, ok := n.aliases[host]; ok {
		return name
	}
	return host
}

// canon is canonLocked taking the lock.
func (n *Network) canon(host string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.canonLocked(host)
}

// ipLocked returns the IP that the canonical host advertises.
func (n *Network) ipLocked(host string) string {
	if net.ParseIP(host) != nil {
		return host
	}
	if ip, ok := n.ips[host]; ok {
		return ip
	}
	for {
		n.nextIP++
		ip := fmt.Sprintf("%s%d.%d", fakeIPPrefix, (n.nextIP>>8)&255, n.nextIP&255)
		if n.hostInUseLocked(ip) {
			continue
		}
		n.ips[host] = ip
		n.aliases[ip] = host
		return ip
	}
}

// hostInUseLocked reports whether any listener is bound on host.
func (n *Network) hostInUseLocked(host string) bool {
	for k := range n.listeners {
		if h, _, _ := splitAddr(k); h == host {
			return true
		}
	}
	return false
}

// freePortLocked returns a port on host that no listener uses.
func (n *Network) freePortLocked(host string) int {
	for {
		p := n.nextPort[host]
		if p < 40000 || p >= 65535 {
			p = 40000
		}
		n.nextPort[host] = p + 1
		if _, ok := n.listeners[joinAddr(host, p)]; !ok {
			return p
		}
	}
}

// notifyLocked wakes everyone waiting for a fault or state change.
func (n *Network) notifyLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// reachableLocked reports whether traffic from one host reaches another now.
func (n *Network) reachableLocked(from, to string) bool {
	if n.paused[from] || n.paused[to] {
		return false
	}
	if from == to {
		return true
	}
	if n.isolated[from] || n.isolated[to] {
		return false
	}
	return !n.blocked[link{from, to}]
}

// linkState reports whether from reaches to, with the channel that is closed
// on the next change.
func (n *Network) linkState(from, to string) (bool, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.reachableLocked(from, to) && !n.closed, n.changed
}

// delayLocked draws a one-way delay for the link from the most specific rule.
func (n *Network) delayLocked(from, to string) time.Duration {
	for _, l := range []link{{from, to}, {from, ""}, {"", to}, {"", ""}} {
		if r, ok := n.delays[l]; ok {
			if r.max <= r.min {
				return r.min
			}
			return r.min + time.Duration(n.rng.Int64N(int64(r.max-r.min)+1))
		}
	}
	return 0
}

// streamDelay is the delay of one stream chunk: the link delay plus one
// retransmission timeout per simulated loss.
func (n *Network) streamDelay(from, to string) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	d := n.delayLocked(from, to)
	for i := 0; i < 8 && n.loss > 0 && n.rng.Float64() < n.loss; i++ {
		d += retransmitDelay
	}
	return d
}

// splitAddr parses "host:port".
func splitAddr(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("memnet: bad address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("memnet: bad port in %q", addr)
	}
	return host, port, nil
}

// joinAddr formats "host:port".
func joinAddr(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
