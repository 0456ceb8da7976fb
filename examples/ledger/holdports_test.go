package main

import (
	"io"
	"net"
)

// portHold keeps a crashed node's ports bound while it is down. A crashed
// node comes back on the ports it had (restartVoter with sameAddr), as a
// supervisor restarts it; the OS picked those ports from the ephemeral
// range at its first start, so while it is down another process of a
// parallel test run may take one of them (CI saw "bind: address already
// in use" for a gossip port). Holding them leaves only the moment between
// release and the new process's bind.
type portHold struct{ held []io.Closer }

// holdPorts binds, for p's node, which has exited, the TCP ports of its
// first listening line (gossip, RPC, HTTP) and the gossip UDP port. A port
// it cannot bind (taken already) is left out.
func holdPorts(p *proc) *portHold {
	h := &portHold{}
	evs := p.out.events("listening")
	if len(evs) == 0 {
		return h
	}
	ev := evs[0]
	for _, k := range []string{"gossip", "rpc", "http"} {
		if l, err := net.Listen("tcp", ev.kv[k]); err == nil {
			h.held = append(h.held, l)
		}
	}
	if c, err := net.ListenPacket("udp", ev.kv["gossip"]); err == nil {
		h.held = append(h.held, c)
	}
	return h
}

// release unbinds the ports; it may be called more than once.
func (h *portHold) release() {
	for _, c := range h.held {
		_ = c.Close()
	}
	h.held = nil
}
