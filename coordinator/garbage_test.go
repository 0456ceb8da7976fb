package coordinator_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestGarbageToPorts sends random bytes, unknown kind bytes, truncated and
// oversized frames to a running node's RPC/raft port, and random datagrams
// and stream bytes to its gossip port; the cluster keeps working.
func TestGarbageToPorts(t *testing.T) {
	t.Parallel()
	const seed = 7
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	leader := cl.WaitFormed(formTimeout)
	target := leader.C()
	payloads := [][]byte{
		{0xff}, {'P'}, {'R', 200}, {'P', 0xff, 0xff, 0xff, 0xff},
		{'P', 0, 0, 0, 10, 1, 2}, {'R', 3, 'a', 'b'},
	}
	lenPrefix := make([]byte, 5)
	lenPrefix[0] = 'P'
	binary.BigEndian.PutUint32(lenPrefix[1:], 1<<31)
	payloads = append(payloads, lenPrefix)
	for i := 0; i < 200; i++ {
		b := make([]byte, rng.IntN(256))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		if i%2 == 0 && len(b) > 0 {
			b[0] = 'P'
		}
		payloads = append(payloads, b)
	}
	for _, p := range payloads {
		sendTCP(t, target.RPCAddr(), p)
		sendTCP(t, target.GossipAddr(), p)
		sendUDP(t, target.GossipAddr(), p)
	}
	// Still one healthy cluster whose leader answers, and writes still work:
	// a member restart makes the leader change the configuration.
	cl.WaitFor("the cluster still formed", formTimeout, cl.Formed)
	l := cl.WaitLeader(formTimeout)
	for _, n := range cl.Running() {
		if n != l {
			cl.Restart(n.Index)
			break
		}
	}
	cl.WaitFor("the cluster formed after a restart", formTimeout, cl.Formed)
}

func sendTCP(t *testing.T, addr string, p []byte) {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(200 * time.Millisecond))
	_, _ = conn.Write(p)
}

func sendUDP(t *testing.T, addr string, p []byte) {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatalf("dial udp %s: %v", addr, err)
	}
	defer conn.Close()
	_, _ = conn.Write(p)
}
