package holdfasttest

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPortUseNamesTheListener: portUse reports a listening socket on the
// port, with this process as its holder.
func TestPortUseNamesTheListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	got := portUse(port)
	if !strings.Contains(got, "LISTEN") || !strings.Contains(got, "pid "+strconv.Itoa(os.Getpid())+" ") {
		t.Fatalf("portUse(%d) = %q, want a LISTEN socket held by pid %d", port, got, os.Getpid())
	}
	ln.Close()
	if got := portUse(port); strings.Contains(got, "LISTEN") {
		t.Fatalf("after close: %q", got)
	}
}
