package holdfasttest

import (
	"net"
	"testing"
)

// ReservePort returns a loopback port that no holdfasttest cluster and no
// other ReservePort caller, in this process or another, of this user or
// another, is given until tb ends; it is free for TCP and UDP when
// returned. On Linux it lies below the kernel's ephemeral range, so no
// port-0 listener or outgoing connection is handed it meanwhile either,
// and a process may close it and bind it again (a restart) without losing
// it. Elsewhere it is a port the kernel picked, free when returned (best
// effort).
func ReservePort(tb testing.TB) int {
	tb.Helper()
	var pl portLocks
	p, ok, err := pl.reserve()
	if err != nil {
		tb.Fatalf("holdfasttest: reserving a port: %v", err)
	}
	tb.Cleanup(pl.release)
	if ok {
		return p
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("holdfasttest: picking a port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
