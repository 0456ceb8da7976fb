package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
)

// Advertised addresses. A node binds its RPC and gossip listeners to
// Config.RPCAddr and Config.GossipAddr, and tells the others where to reach
// it: Config.AdvertiseRPCAddr and Config.AdvertiseGossipAddr when set (a
// container's or NAT's address), else the bound address. An unspecified
// bound host (0.0.0.0, ::, or none) is not an address another host can
// dial, so in its place the node advertises an address of one of its
// network interfaces, and says so in a warning.

// CheckAdvertise checks the advertised address in Config field field:
// host:port with a host other nodes can dial (port 0 stands for the bound
// port), an IP address when ipOnly. "" is accepted (nothing set). A bad
// address is a *FieldError naming field.
func CheckAdvertise(field, addr string, ipOnly bool) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	var msg string
	switch {
	case err != nil:
		msg = fmt.Sprintf("%q is not host:port: %v", addr, err)
	case unspecifiedHost(host):
		msg = fmt.Sprintf("%q has an unspecified host, which no other node can dial: give this node's reachable address", addr)
	case ipOnly && net.ParseIP(host) == nil:
		msg = fmt.Sprintf("%q: the host must be an IP address (gossip advertises IPs)", addr)
	default:
		return nil
	}
	return &FieldError{Field: field, Msg: msg}
}

// unspecifiedHost reports whether host is empty or 0.0.0.0 or ::.
func unspecifiedHost(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// loopbackHost reports whether host is a loopback IP or "localhost".
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// advertiseFor returns the address to advertise for a listener bound at
// bind when adv (the Advertise field) is set or the bind host is
// unspecified, and "" when the bound address is to be advertised. picked
// is true when the host was taken from an interface.
func advertiseFor(bind, adv string) (addr string, picked bool) {
	if adv != "" {
		return adv, false
	}
	host, port, err := net.SplitHostPort(bind)
	if err != nil || !unspecifiedHost(host) {
		return "", false
	}
	return net.JoinHostPort(interfaceIP(host != "::" && host != "[::]").String(), port), true
}

// interfaceIP returns an address of an up, non-loopback interface (an IPv4
// one first when preferV4), or the loopback address when there is none.
func interfaceIP(preferV4 bool) net.IP {
	ifaces, err := net.Interfaces()
	if err != nil {
		return net.IPv4(127, 0, 0, 1)
	}
	var v4, v6 net.IP
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || !ipn.IP.IsGlobalUnicast() {
				continue
			}
			if ip4 := ipn.IP.To4(); ip4 != nil && v4 == nil {
				v4 = ip4
			} else if ipn.IP.To4() == nil && v6 == nil {
				v6 = ipn.IP
			}
		}
	}
	switch {
	case v4 != nil && (preferV4 || v6 == nil):
		return v4
	case v6 != nil:
		return v6
	}
	return net.IPv4(127, 0, 0, 1)
}

// Picked records which advertised addresses ResolveAdvertise took from an
// interface, for WarnPicked to report once the listeners are bound.
type Picked struct{ RPC, Gossip bool }

// ResolveAdvertise sets *advRPC and *advGossip (Config.AdvertiseRPCAddr and
// AdvertiseGossipAddr) for listeners bound at rpcBind and gossipBind: kept
// when set, an interface address in place of an unspecified bind host
// (reported in picked), else "" (the bound address is advertised).
func ResolveAdvertise(rpcBind string, advRPC *string, gossipBind string, advGossip *string) (picked Picked) {
	var addr string
	addr, picked.RPC = advertiseFor(rpcBind, *advRPC)
	*advRPC = addr
	addr, picked.Gossip = advertiseFor(gossipBind, *advGossip)
	*advGossip = addr
	return picked
}

// WarnPicked logs a warning for each address ResolveAdvertise picked from
// an interface, with the address advertised now that the listener is bound
// (rpcAddr, gossipAddr: its real port, not the 0 of a bind to port 0).
func WarnPicked(log *slog.Logger, picked Picked, rpcBind, rpcAddr, gossipBind, gossipAddr string) {
	for _, f := range []struct {
		picked                bool
		name, bindField, flag string
		bind, addr            string
	}{
		{picked.RPC, "AdvertiseRPCAddr", "RPCAddr", "-advertise-rpc", rpcBind, rpcAddr},
		{picked.Gossip, "AdvertiseGossipAddr", "GossipAddr", "-advertise-gossip", gossipBind, gossipAddr},
	} {
		if f.picked {
			log.Warn(f.bindField+" binds every interface; advertising an interface address in its place: set Config."+
				f.name+" (ledger "+f.flag+") to choose", "bind", f.bind, "advertise", f.addr)
		}
	}
}

// WarnLoopbackAdvertise logs a warning when this node advertises a
// loopback address (rpcAddr, gossipAddr) while a join seed is on another
// host, which cannot reach it there.
func WarnLoopbackAdvertise(log *slog.Logger, seeds []string, rpcAddr, gossipAddr string) {
	seed := remoteSeed(seeds)
	if seed == "" {
		return
	}
	for _, f := range []struct{ name, bindField, flag, addr string }{
		{"AdvertiseRPCAddr", "RPCAddr", "-advertise-rpc", rpcAddr},
		{"AdvertiseGossipAddr", "GossipAddr", "-advertise-gossip", gossipAddr},
	} {
		if host, _, err := net.SplitHostPort(f.addr); err == nil && loopbackHost(host) {
			log.Warn("advertising a loopback address while joining another host: that host cannot reach this node; bind "+
				f.bindField+" to a reachable address or set Config."+f.name+" (ledger "+f.flag+")",
				"advertise", f.addr, "seed", seed)
		}
	}
}

// remoteSeed returns the first join seed whose host is not loopback, or "".
func remoteSeed(seeds []string) string {
	for _, s := range seeds {
		if i := strings.Index(s, "/"); i > 0 {
			s = s[i+1:]
		}
		host, _, err := net.SplitHostPort(s)
		if err != nil {
			host = s
		}
		if !loopbackHost(host) {
			return s
		}
	}
	return ""
}
