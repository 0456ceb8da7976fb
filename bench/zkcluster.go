package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZooKeeper comes from Debian's zookeeper package (3.8), installed by
// bench/install-zookeeper.sh. Every server is its own JVM, started by the
// bench with the package's jar and a configuration of the bench's own, on
// loopback, with its data in a temp dir (forceSync on: ZooKeeper's
// default, so every transaction is fsynced before it is acknowledged).
const (
	zkJar        = "/usr/share/java/zookeeper.jar" // its manifest names the other jars
	zkMain       = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
	zkInstallCmd = "bench/install-zookeeper.sh (as root)"
	// zkHeap is upstream zkEnv.sh's default server heap (ZK_SERVER_HEAP,
	// 1000 MB); Debian's scripts set none, which would leave the JVM a
	// quarter of the machine's memory.
	zkHeap = "-Xmx1000m"
	// zkTick is the server's tickTime. ZooKeeper's smallest session
	// timeout is two ticks, so a 2 s session (sessionTTL) needs a tick of
	// at most 1 s; the sample configuration's 2 s tick would refuse it.
	// Sessions expire in buckets of one tick.
	zkTick = 1000 * time.Millisecond
)

// zkAvailable reports why ZooKeeper cannot run here, or nil.
func zkAvailable() error {
	if _, err := os.Stat(zkJar); err != nil {
		return fmt.Errorf("ZooKeeper is not installed (%s missing): run %s", zkJar, zkInstallCmd)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("no java on PATH: run %s", zkInstallCmd)
	}
	return nil
}

// zkCluster is n ZooKeeper servers, each a JVM child of this process.
type zkCluster struct {
	dir     string
	servers []*zkServer
	// order lists the servers' client addresses followers first, then
	// the leader: client i of a workload connects to order[i%n], so that a
	// single client is on a follower, as holdfast's is.
	order  []string
	reader *zkConn // the lookup's session, once loadShards ran
}

type zkServer struct {
	client string // 127.0.0.1:port
	cmd    *exec.Cmd
	done   chan struct{} // closed when the JVM has exited
	log    string        // its stdout and stderr
}

// zkConfig returns server i's zoo.cfg in an ensemble of the given client,
// quorum and election ports (standalone when there is one server).
func zkConfig(dataDir string, i int, client, quorum, election []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=10\nsyncLimit=5\n", zkTick.Milliseconds())
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", dataDir, client[i])
	fmt.Fprintf(&b, "minSessionTimeout=%d\n", sessionTTL.Milliseconds())
	// Every session of the bench comes from 127.0.0.1: lift the limit of
	// 60 connections per address (workload 6 holds 100 sessions).
	b.WriteString("maxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n")
	if len(client) > 1 {
		for j := range client {
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", j+1, quorum[j], election[j])
		}
	}
	return b.String()
}

// startZK starts n servers and waits until each serves (leader, follower
// or standalone) and a client can write.
func startZK(n int, timeout time.Duration) (*zkCluster, error) {
	if err := zkAvailable(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "zk-bench-")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(3 * n)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	client, quorum, election := ports[:n], ports[n:2*n], ports[2*n:]
	z := &zkCluster{dir: dir}
	for i := 0; i < n; i++ {
		s, err := startZKServer(filepath.Join(dir, fmt.Sprintf("zk%d", i+1)), i, client, quorum, election)
		if err != nil {
			z.close()
			return nil, err
		}
		z.servers = append(z.servers, s)
	}
	if err := z.waitServing(timeout); err != nil {
		z.close()
		return nil, err
	}
	return z, nil
}

func startZKServer(dir string, i int, client, quorum, election []int) (*zkServer, error) {
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", i+1)), 0o644); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(zkConfig(data, i, client, quorum, election)), 0o644); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "server.log")
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own descriptor
	cmd := exec.Command("java", zkHeap, "-cp", zkJar, zkMain, cfg)
	cmd.Stdout, cmd.Stderr = out, out
	// The JVM dies with the bench if the bench is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting ZooKeeper server %d: %w", i+1, err)
	}
	s := &zkServer{client: fmt.Sprintf("127.0.0.1:%d", client[i]), cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() { cmd.Wait(); close(s.done) }()
	return s, nil
}

// waitServing polls every server's srvr until each reports its mode and
// a client's write succeeds, then records the followers-first order.
func (z *zkCluster) waitServing(timeout time.Duration) error {
	var modes []string
	err := poll(timeout, func() error {
		modes = modes[:0]
		for i, s := range z.servers {
			select {
			case <-s.done:
				return fmt.Errorf("ZooKeeper server %d exited: %s", i+1, tail(s.log))
			default:
			}
			m, err := zkMode(s.client)
			if err != nil {
				return fmt.Errorf("%w: ZooKeeper server %d: %v", errNotYet, i+1, err)
			}
			modes = append(modes, m)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var followers, others []string
	for i, m := range modes {
		if m == "follower" {
			followers = append(followers, z.servers[i].client)
		} else {
			others = append(others, z.servers[i].client)
		}
	}
	z.order = append(followers, others...)
	return poll(timeout, func() error {
		c, err := z.conn(0)
		if err != nil {
			return err
		}
		defer c.close()
		return zkEnsure(c.Conn, "/holdfast-bench")
	})
}

// zkMode asks a server's srvr command for its mode: leader, follower or
// standalone. (zk.FLWSrvr cannot parse the version line of Debian's build.)
func zkMode(addr string) (string, error) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := nc.Write([]byte("srvr")); err != nil {
		return "", err
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok && m != "" {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("no mode in srvr's answer %q", strings.TrimSpace(string(b)))
}

func (z *zkCluster) addrs() []string {
	var out []string
	for _, s := range z.servers {
		out = append(out, s.client)
	}
	return out
}

// close stops every server (SIGTERM, SIGKILL after 10 s) and removes the
// data dirs.
func (z *zkCluster) close() {
	if z.reader != nil {
		z.reader.close()
	}
	for _, s := range z.servers {
		s.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, s := range z.servers {
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	}
	os.RemoveAll(z.dir)
}

// tail returns the last lines of a server's log, for an error message.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], " / ")
}

// zkConn is one client session with a dialer that can cut it off: kill
// closes its TCP connection and refuses every later dial, so the session's
// pings stop and the server expires it, as when the client's process dies
// (Close would end the session at once).
type zkConn struct {
	*zk.Conn
	mu     sync.Mutex
	killed bool
	nc     []net.Conn
}

var errZKKilled = errors.New("client killed by the bench")

// conn opens a session (timeout sessionTTL) with server order[i%n] and
// waits until the server has granted it.
func (z *zkCluster) conn(i int) (*zkConn, error) {
	c := &zkConn{}
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.killed {
			return nil, errZKKilled
		}
		nc, err := net.DialTimeout(network, addr, timeout)
		if err == nil {
			c.nc = append(c.nc, nc)
		}
		return nc, err
	}
	conn, events, err := zk.Connect([]string{z.order[i%len(z.order)]}, sessionTTL,
		zk.WithDialer(dial), zk.WithLogger(zkQuiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	c.Conn = conn
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil, errors.New("ZooKeeper connection closed before its session began")
			}
			if ev.State == zk.StateHasSession {
				go drain(events)
				return c, nil
			}
		case <-timeout:
			conn.Close()
			return nil, errors.New("no ZooKeeper session within 30 s")
		}
	}
}

func drain(events <-chan zk.Event) {
	for range events {
	}
}

// kill cuts the session off without closing it.
func (c *zkConn) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.killed = true
	for _, nc := range c.nc {
		nc.Close()
	}
}

// close ends the session (after kill, only the client's goroutines: the
// close request cannot reach the server, and Close gives up after 1 s).
func (c *zkConn) close() { c.Conn.Close() }

// zkQuiet drops the client's log lines.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// zkEnsure creates path (and its parents) if it does not exist.
func zkEnsure(c *zk.Conn, path string) error {
	p := ""
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		p += "/" + part
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}
