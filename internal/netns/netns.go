package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// RequireEnv is the environment variable that turns Require's skip into a
// failure when set to 1.
const RequireEnv = "HOLDFAST_REQUIRE_NETNS"

// Subnet is the test subnet of every Net; node i has address 10.99.0.(i+2).
const Subnet = "10.99.0.0/24"

// Available reports whether namespaces can be made here, and why not.
func Available() error {
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("the ip command (iproute2) is not installed: %w", err)
	}
	if os.Geteuid() != 0 {
		return errors.New("not running as root: creating network namespaces needs CAP_SYS_ADMIN and CAP_NET_ADMIN")
	}
	name := "hfprobe-" + randomID()
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns add failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Require skips t when namespaces cannot be made here, naming the reason;
// with HOLDFAST_REQUIRE_NETNS=1 it fails t instead.
func Require(t testing.TB) {
	t.Helper()
	err := Available()
	if err == nil {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("network namespaces required (%s=1) but unavailable: %v", RequireEnv, err)
	}
	t.Skipf("network namespaces unavailable (%v); set %s=1 to make this a failure", err, RequireEnv)
}

// Net is a set of node namespaces joined by one bridge.
type Net struct {
	t     testing.TB
	id    string
	hub   string // the bridge's namespace
	nodes []*Node
}

// Node is one namespace of a Net.
type Node struct {
	Index int
	NS    string // the namespace's name (under /var/run/netns)
	IP    string // eth0's address
	port  string // its bridge port, in the hub namespace
	net   *Net
}

// New creates n node namespaces joined by a bridge, and registers their
// removal with t.Cleanup (register process cleanups after New, so they run
// first). Call Require before.
func New(t testing.TB, n int) *Net {
	t.Helper()
	nt := &Net{t: t, id: randomID()}
	nt.hub = "hf-" + nt.id + "-hub"
	t.Cleanup(nt.teardown)
	nt.ip("netns", "add", nt.hub)
	nt.ip("-n", nt.hub, "link", "set", "lo", "up")
	nt.ip("-n", nt.hub, "link", "add", "br0", "type", "bridge")
	nt.ip("-n", nt.hub, "link", "set", "br0", "up")
	for i := range n {
		nd := &Node{Index: i, NS: fmt.Sprintf("hf-%s-%d", nt.id, i), IP: fmt.Sprintf("10.99.0.%d", i+2),
			port: fmt.Sprintf("p%d", i), net: nt}
		nt.nodes = append(nt.nodes, nd)
		nt.ip("netns", "add", nd.NS)
		nt.ip("-n", nd.NS, "link", "set", "lo", "up")
		nt.ip("-n", nt.hub, "link", "add", nd.port, "type", "veth", "peer", "name", "eth0", "netns", nd.NS)
		nt.ip("-n", nt.hub, "link", "set", nd.port, "master", "br0")
		nt.ip("-n", nt.hub, "link", "set", nd.port, "up")
		nt.ip("-n", nd.NS, "addr", "add", nd.IP+"/24", "dev", "eth0")
		nt.ip("-n", nd.NS, "link", "set", "eth0", "up")
	}
	nt.waitUp()
	return nt
}

// waitUp waits until every link is up and every bridge port forwards: the
// kernel applies carrier changes asynchronously (batched, up to a second
// apart on a busy machine), and a first connection made before that times
// out.
func (nt *Net) waitUp() {
	nt.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, nd := range nt.nodes {
		for !nt.shows([]string{"-n", nt.hub, "-d", "link", "show", nd.port}, "bridge_slave state forwarding") ||
			!nt.shows([]string{"-n", nd.NS, "link", "show", "eth0"}, "state UP") {
			if time.Now().After(deadline) {
				nt.t.Fatalf("netns: the link of node %d is not up and forwarding after 30s", nd.Index)
			}
			time.Sleep(20 * time.Millisecond) // polling the kernel's link state
		}
	}
}

// shows reports whether the output of one ip command contains want.
func (nt *Net) shows(args []string, want string) bool {
	out, err := exec.Command("ip", args...).CombinedOutput()
	return err == nil && strings.Contains(string(out), want)
}

// Node returns node i.
func (nt *Net) Node(i int) *Node { return nt.nodes[i] }

// ip runs one ip command and fails the test if it fails.
func (nt *Net) ip(args ...string) {
	nt.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		nt.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
}

// teardown deletes every namespace (their interfaces and the bridge go
// with them); errors are reported, not fatal.
func (nt *Net) teardown() {
	for _, ns := range append([]string{nt.hub}, nt.names()...) {
		if _, err := os.Stat("/var/run/netns/" + ns); err != nil {
			continue
		}
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			nt.t.Errorf("ip netns del %s: %v: %s", ns, err, strings.TrimSpace(string(out)))
		}
	}
}

func (nt *Net) names() []string {
	var out []string
	for _, nd := range nt.nodes {
		out = append(out, nd.NS)
	}
	return out
}

// Cut sets the node's bridge port down: no traffic to or from it.
func (nd *Node) Cut() { nd.net.ip("-n", nd.net.hub, "link", "set", nd.port, "down") }

// Heal sets the node's bridge port up again.
func (nd *Node) Heal() { nd.net.ip("-n", nd.net.hub, "link", "set", nd.port, "up") }

// Addr is the node's address with port.
func (nd *Node) Addr(port int) string { return fmt.Sprintf("%s:%d", nd.IP, port) }

// Command returns a command that runs name with args inside the node's
// namespace. ip netns exec replaces itself with the program, so the
// command's process is the program's.
func (nd *Node) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", nd.NS, name}, args...)...)
}

// inside runs f on a thread locked to a goroutine of its own that has
// entered the node's namespace, then returns the thread to the namespace
// it came from before unlocking it. A socket f opens stays in the node's
// namespace whatever thread uses it later. The thread is not simply left
// to exit: a child process started earlier from that thread with
// Pdeathsig would be killed by its exit. Should the way back fail, the
// thread stays locked and exits with the goroutine.
func (nd *Node) inside(f func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- fmt.Errorf("netns: this thread's namespace: %w", err)
			runtime.UnlockOSThread()
			return
		}
		defer unix.Close(orig)
		fd, err := unix.Open("/var/run/netns/"+nd.NS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- fmt.Errorf("netns %s: %w", nd.NS, err)
			runtime.UnlockOSThread()
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			ch <- fmt.Errorf("setns %s: %w", nd.NS, err)
			runtime.UnlockOSThread()
			return
		}
		err = f()
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

// DialContext opens a connection from inside the node's namespace.
func (nd *Node) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := nd.inside(func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Listen opens a listener inside the node's namespace.
func (nd *Node) Listen(network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := nd.inside(func() (err error) {
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// HTTPClient returns a client whose connections are opened inside the
// node's namespace; it keeps no idle connections.
func (nd *Node) HTTPClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: nd.DialContext, DisableKeepAlives: true}}
}

// randomID is 8 hex digits, to name one Net's namespaces.
func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
