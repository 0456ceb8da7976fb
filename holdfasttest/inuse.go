package holdfasttest

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
)

// inUse describes, when err is a port of node i found in use, the sockets
// on that port (see portUse), else "".
func (cl *Cluster) inUse(i int, err error) string {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return ""
	}
	var b strings.Builder
	n := cl.Node(i)
	for _, addr := range []string{n.Config.RPCAddr, n.Config.GossipAddr} {
		if _, p, err := net.SplitHostPort(addr); err == nil {
			if port, err := strconv.Atoi(p); err == nil && port != 0 {
				fmt.Fprintf(&b, "\nport %d: %s", port, portUse(port))
			}
		}
	}
	return b.String()
}
