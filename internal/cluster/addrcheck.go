package cluster

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Addrs are the addresses of a node's Config that CheckAddrs checks.
type Addrs struct {
	GossipAddr, RPCAddr                   string
	AdvertiseRPCAddr, AdvertiseGossipAddr string
	Join                                  []string
	// InMemory: the node runs on an in-memory network (Config.Network),
	// whose hosts are names of its own.
	InMemory bool
}

// CheckAddrs checks the syntax of every address in c before anything
// binds or dials: GossipAddr and RPCAddr are HOST:PORT (gossip's host an
// IP address or empty, on a real network), the advertised addresses' ports are in range, and
// each Join entry names a host and, if it has one, a port in range. A bad
// address is a *FieldError naming the Config field.
func CheckAddrs(c Addrs) error {
	// On real UDP and TCP, gossip binds to an IP; an in-memory network
	// (Config.Network) has host names of its own.
	if err := checkBind("GossipAddr", c.GossipAddr, "7946", !c.InMemory); err != nil {
		return err
	}
	if err := checkBind("RPCAddr", c.RPCAddr, "7947", false); err != nil {
		return err
	}
	for _, f := range []struct{ field, addr string }{
		{"AdvertiseRPCAddr", c.AdvertiseRPCAddr}, {"AdvertiseGossipAddr", c.AdvertiseGossipAddr},
	} {
		if f.addr == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(f.addr); err == nil {
			if msg := portProblem(port, true); msg != "" {
				return addrErr(f.field, "%q: %s", f.addr, msg)
			}
		}
	}
	for i, seed := range c.Join {
		if msg := joinProblem(seed); msg != "" {
			return addrErr(fmt.Sprintf("Join[%d]", i), "%q: %s", seed, msg)
		}
	}
	return nil
}

// checkBind checks a listen address: HOST:PORT, the port 0 (any free one)
// to 65535; ipOnly: the host an IP address or empty (every interface).
// example is the port the error suggests.
func checkBind(field, addr, example string, ipOnly bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addrErr(field, "%q is not HOST:PORT (%s): give an address such as 127.0.0.1:%s (port 0: any free port)",
			addr, splitProblem(err), example)
	}
	if msg := portProblem(port, true); msg != "" {
		return addrErr(field, "%q: %s", addr, msg)
	}
	if ipOnly && host != "" && net.ParseIP(host) == nil {
		return addrErr(field, "%q: the host must be an IP address (gossip binds to an IP; a name such as localhost "+
			"would bind every interface): give 127.0.0.1:%s for loopback, or this machine's IP", addr, port)
	}
	return nil
}

// joinProblem says what is wrong with one Join entry, or "": an optional
// "name/" prefix, then HOST:PORT or a HOST alone (memberlist then dials
// this node's own gossip port there).
func joinProblem(seed string) string {
	hostPort := seed
	if i := strings.Index(seed, "/"); i > 0 {
		hostPort = seed[i+1:]
	}
	if strings.TrimSpace(hostPort) == "" {
		return "no address: a join address is a member's gossip HOST:PORT, as its listening line prints it"
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return "" // HOST alone: this node's gossip port there
		}
		return splitProblem(err) + ": a join address is a member's gossip HOST:PORT"
	}
	if host == "" {
		return "no host: a join address is a member's gossip HOST:PORT"
	}
	if msg := portProblem(port, false); msg != "" {
		return msg + ": a join address is a member's gossip HOST:PORT"
	}
	return ""
}

// portProblem says what is wrong with a port, or "": a number from 0
// (when zeroOK) or 1 to 65535.
func portProblem(port string, zeroOK bool) string {
	n, err := strconv.ParseUint(port, 10, 64)
	switch {
	case err != nil:
		return fmt.Sprintf("port %q is not a number", port)
	case n > 65535:
		return fmt.Sprintf("port %d is out of range (0 to 65535)", n)
	case n == 0 && !zeroOK:
		return "port 0 names no member"
	}
	return ""
}

// splitProblem is net.SplitHostPort's complaint without the address it
// repeats.
func splitProblem(err error) string {
	if ae, ok := err.(*net.AddrError); ok {
		return ae.Err
	}
	return err.Error()
}

// addrErr is the *FieldError of Config field field (a top-level one).
func addrErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}
