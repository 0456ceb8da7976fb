package memnet

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// recvPacket waits up to d for a packet.
func recvPacket(tr memberlist.Transport, d time.Duration) *memberlist.Packet {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case p := <-tr.PacketCh():
		return p
	case <-t.C:
		return nil
	}
}

func TestPackets(t *testing.T) {
	n := New(10)
	defer n.Close()
	t1, err := n.GossipTransport("g1:7946")
	if err != nil {
		t.Fatal(err)
	}
	t2, err := n.Node("g2").GossipTransport(":7946")
	if err != nil {
		t.Fatal(err)
	}
	ip1, port, _ := t1.FinalAdvertiseAddr("", 0)
	if !strings.HasPrefix(ip1.String(), "127.77.") || port != 7946 {
		t.Fatalf("advertise %v:%d", ip1, port)
	}
	a2, err := n.IPAddr("g2:7946")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := t1.WriteTo([]byte("by ip"), a2); err != nil {
		t.Fatal(err)
	}
	p := recvPacket(t2, 5*time.Second)
	if p == nil || string(p.Buf) != "by ip" || p.From.String() != ip1.String()+":7946" {
		t.Fatalf("packet %+v", p)
	}
	n.SetDelay("g1", "g2", 20*time.Millisecond, 30*time.Millisecond)
	start := time.Now()
	_, _ = t1.WriteToAddress([]byte("by name"), memberlist.Address{Addr: "g2:7946", Name: "x"})
	if p := recvPacket(t2, 5*time.Second); p == nil || string(p.Buf) != "by name" {
		t.Fatalf("packet %+v", p)
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Fatal("delay not applied")
	}
	n.Isolate(a2) // by IP
	_, _ = t1.WriteTo([]byte("lost"), "g2:7946")
	if p := recvPacket(t2, 60*time.Millisecond); p != nil {
		t.Fatalf("packet through partition: %q", p.Buf)
	}
	n.Heal()
	n.SetLoss(1)
	_, _ = t2.WriteTo([]byte("lost"), "g1:7946")
	if p := recvPacket(t1, 30*time.Millisecond); p != nil {
		t.Fatalf("packet through loss 1: %q", p.Buf)
	}
	n.SetLoss(0)
	// Streams of the transport are memnet conns.
	c, err := t2.DialTimeout(ip1.String()+":7946", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("stream"))
	c.Close()
	s := <-t1.StreamCh()
	if b, err := io.ReadAll(s); err != nil || string(b) != "stream" {
		t.Fatalf("stream %q, %v", b, err)
	}
	s.Close()
	_ = t1.Shutdown()
	if _, err := t2.DialTimeout("g1:7946", time.Second); err == nil {
		t.Fatal("dial after Shutdown succeeded")
	}
}

// MuteGossip drops a host's gossip packets and refuses its gossip streams
// while its other streams flow.
func TestMuteGossip(t *testing.T) {
	n := New(11)
	defer n.Close()
	t1, err := n.GossipTransport("g1:7946")
	if err != nil {
		t.Fatal(err)
	}
	t2, err := n.GossipTransport("g2:7946")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := n.Listen("g2:7000")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	n.MuteGossip("g2")
	_, _ = t1.WriteTo([]byte("muted"), "g2:7946")
	_, _ = t2.WriteTo([]byte("muted"), "g1:7946")
	if _, err := t1.DialTimeout("g2:7946", time.Second); err == nil {
		t.Fatal("gossip stream to a muted host")
	}
	c, err := n.Node("g1").DialContext(context.Background(), "g2:7000")
	if err != nil {
		t.Fatalf("raft stream to a muted host: %v", err)
	}
	c.Close()
	n.UnmuteGossip("g2")
	_, _ = t1.WriteTo([]byte("back"), "g2:7946")
	if p := recvPacket(t2, 5*time.Second); p == nil || string(p.Buf) != "back" {
		t.Fatalf("after unmute: %+v", p)
	}
	if p := recvPacket(t1, 30*time.Millisecond); p != nil {
		t.Fatalf("a muted packet arrived: %q", p.Buf)
	}
}
