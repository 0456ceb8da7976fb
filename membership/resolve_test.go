package membership

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// fakeDNS is a LookupHost over a fixed table that records the names asked.
type fakeDNS struct {
	mu    sync.Mutex
	table map[string][]string
	asked []string
}

func (d *fakeDNS) lookupHost(_ context.Context, host string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked = append(d.asked, host)
	if ips, ok := d.table[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// startIslands starts one unjoined node on each of ips, all on one port
// (as the pods behind one DNS name are), and returns them. The port comes
// from the first node's port 0; if another process holds it on one of the
// other addresses, it starts over on a new port.
func startIslands(t *testing.T, ips []string) []*Membership {
	t.Helper()
	for attempt := 1; attempt <= 5; attempt++ {
		first, err := New(Config{NodeName: "n0", BindAddr: net.JoinHostPort(ips[0], "0"), Profile: Local,
			Meta: Meta{NodeID: "id-n0"}, Logger: newTestLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		nodes := []*Membership{first}
		_, port, _ := net.SplitHostPort(first.Addr())
		for i, ip := range ips[1:] {
			name := "n" + strconv.Itoa(i+1)
			m, err := New(Config{NodeName: name, BindAddr: net.JoinHostPort(ip, port), Profile: Local,
				Meta: Meta{NodeID: "id-" + name}, Logger: newTestLogger(t)})
			if err != nil {
				t.Logf("attempt %d: %s on %s:%s: %v", attempt, name, ip, port, err)
				break
			}
			nodes = append(nodes, m)
		}
		t.Cleanup(func() {
			for _, m := range nodes {
				if err := m.Shutdown(); err != nil {
					t.Errorf("Shutdown(%s): %v", m.Local().Name, err)
				}
			}
		})
		if len(nodes) == len(ips) {
			return nodes
		}
	}
	t.Fatalf("could not bind one port on all of %v", ips)
	return nil
}

// TestJoinDNSNameJoinsEveryAddress joins a name that resolves to three
// loopback addresses, each with a node that knows no other: Join must
// contact all three, so each of them learns of the joiner directly (a
// join that stopped at the first address would leave two islands).
func TestJoinDNSNameJoinsEveryAddress(t *testing.T) {
	ips := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	islands := startIslands(t, ips)
	_, port, _ := net.SplitHostPort(islands[0].Addr())
	const name = "ledger.holdfast.test"
	dns := &fakeDNS{table: map[string][]string{name: ips}}
	joiner := startNode(t, "j1", func(c *Config) { c.LookupHost = dns.lookupHost })

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	n, err := joiner.Join(ctx, []string{net.JoinHostPort(name, port)})
	if err != nil {
		t.Fatalf("Join: %v", err)
	}
	if n != len(ips) {
		t.Errorf("Join reached %d addresses, want %d", n, len(ips))
	}
	if len(dns.asked) != 1 || dns.asked[0] != name {
		t.Errorf("looked up %v, want [%s]", dns.asked, name)
	}
	all := append([]*Membership{joiner}, islands...)
	testkit.Eventually(t, "one pool of four", waitTimeout, func() error { return allAlive(all, "j1", "n0", "n1", "n2") })
}

// TestJoinSkipsSelfAndReportsLookups checks the other outcomes of
// resolving: a name that resolves only to this node, and one that does
// not resolve, fail with the reason (so the caller retries rather than
// believing it joined); a seed list mixing a name that does not resolve
// with a reachable address joins.
func TestJoinSkipsSelfAndReportsLookups(t *testing.T) {
	dns := &fakeDNS{table: map[string][]string{}}
	a := startNode(t, "a1", func(c *Config) { c.LookupHost = dns.lookupHost })
	b := startNode(t, "b1")
	host, port, _ := net.SplitHostPort(a.Addr())
	dns.table["self.holdfast.test"] = []string{host, host}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for _, seeds := range [][]string{
		{"self.holdfast.test:" + port},
		{a.Addr()},
	} {
		n, err := a.Join(ctx, seeds)
		t.Logf("Join(%v): %v", seeds, err)
		if !errors.Is(err, errOnlySelf) || n != 0 {
			t.Errorf("Join(%v) = %d, %v; want 0 and an error wrapping %q", seeds, n, err, errOnlySelf)
		}
	}
	n, err := a.Join(ctx, []string{"gone.holdfast.test:" + port})
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || n != 0 {
		t.Errorf("Join(unresolvable) = %d, %v; want 0 and a *net.DNSError", n, err)
	} else {
		t.Logf("unresolvable: %v", err)
	}
	n, err = a.Join(ctx, []string{"gone.holdfast.test:" + port, b.Addr()})
	if err != nil || n != 1 {
		t.Fatalf("Join(unresolvable, reachable) = %d, %v; want 1, nil", n, err)
	}
	testkit.Eventually(t, "a1 and b1 in one pool", waitTimeout, func() error { return allAlive([]*Membership{a, b}, "a1", "b1") })
}
