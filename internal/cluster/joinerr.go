package cluster

import (
	"strings"
)

// joinHints maps what memberlist's join errors say to what a user should
// check. The first entry whose fragment appears in a seed's error applies.
var joinHints = []struct {
	fragments []string
	hint      string
}{
	{[]string{"decrypt", "encrypt"},
		"the seeds use other gossip keys or none: check Config.Gossip.Keys (ledger -certs gossip.key)"},
	{[]string{"connection refused"},
		"nothing listening at the join address: is that node up, and is this its gossip port?"},
	{[]string{"invalid msgType", "connection reset", "EOF", "tls:", "record header", "malformed"},
		"the join address answered but is not a gossip port: wrong port? Config.Join (ledger -join) takes a gossip address, not the RPC address"},
	{[]string{"i/o timeout", "deadline exceeded", "no route to host", "network is unreachable", "host is down"},
		"no answer from the join address: wrong host, a firewall, or the node is paused"},
	{[]string{"no such host", "resolve "},
		"the join name does not resolve: check the DNS name (a headless Service publishes pods only once they run)"},
	{[]string{"only this node"},
		"every join address is this node's own: give another node's gossip address"},
}

// describeJoinError turns a join error (memberlist's multierror text, one
// "* failed to join ADDR: ..." per seed) into one line, and the hints that
// apply to it, most useful first.
func describeJoinError(err error) (line, hint string) {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "*"))
		if l == "" || strings.HasSuffix(l, "error occurred:") || strings.HasSuffix(l, "errors occurred:") {
			continue
		}
		parts = append(parts, strings.TrimSuffix(l, ":"))
	}
	line = strings.Join(parts, "; ")
	var hints []string
	for _, h := range joinHints {
		for _, f := range h.fragments {
			if strings.Contains(line, f) {
				hints = append(hints, h.hint)
				break
			}
		}
	}
	return line, strings.Join(hints, "; ")
}
