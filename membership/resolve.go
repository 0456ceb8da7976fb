package membership

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/holdfast-go/holdfast/internal/errline"
)

// errOnlySelf is the reason a Join fails when every seed is this node.
var errOnlySelf = errors.New("the seeds name only this node")

// resolveSeeds turns seeds into the addresses Join contacts: a seed whose
// host is a name becomes one "ip:port" per address the name resolves to
// (Config.LookupHost), so a DNS name that resolves to several nodes joins
// all of them; an IP seed, or one without a port, is kept as it is. An
// optional "name/" prefix is kept on each address. Duplicates and this
// node's own address are dropped. It fails only when no address is left,
// naming the seeds that did not resolve.
func (m *Membership) resolveSeeds(ctx context.Context, seeds []string) ([]string, error) {
	lookup := m.cfg.LookupHost
	if lookup == nil {
		lookup = net.DefaultResolver.LookupHost
	}
	self := m.Addr()
	seen := map[string]bool{}
	var out []string
	var errs []error
	add := func(prefix, addr string) {
		if addr == self || seen[prefix+addr] {
			return
		}
		seen[prefix+addr] = true
		out = append(out, prefix+addr)
	}
	for _, seed := range seeds {
		prefix, hostPort := "", seed
		if i := strings.Index(seed, "/"); i > 0 {
			prefix, hostPort = seed[:i+1], seed[i+1:]
		}
		host, port, err := net.SplitHostPort(hostPort)
		if err != nil || net.ParseIP(host) != nil {
			add(prefix, hostPort) // memberlist parses it (and adds a default port)
			continue
		}
		ips, err := lookup(ctx, host)
		if err != nil {
			errs = append(errs, fmt.Errorf("resolve %s: %w", host, err))
			continue
		}
		if len(ips) == 0 {
			errs = append(errs, fmt.Errorf("resolve %s: no addresses", host))
		}
		for _, ip := range ips {
			add(prefix, net.JoinHostPort(ip, port))
		}
	}
	if len(out) == 0 {
		if len(errs) == 0 {
			errs = append(errs, fmt.Errorf("%w (%s)", errOnlySelf, self))
		}
		return nil, errline.Join(errs...) // logged: one line
	}
	return out, nil
}
