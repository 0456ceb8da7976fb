package memnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// pair returns a connected (client on host from, server on host to) pair.
func pair(t *testing.T, n *Network, from, to string) (client, server net.Conn) {
	t.Helper()
	l, err := n.Listen(to + ":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client, err = n.Node(from).DialContext(ctx, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// readN reads exactly k bytes with a deadline.
func readN(t *testing.T, c net.Conn, k int, timeout time.Duration) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	defer c.SetReadDeadline(time.Time{})
	b := make([]byte, k)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read: %v", err)
	}
	return b
}

// expectTimeout checks that a read of c times out after d with no data.
func expectTimeout(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	n, err := c.Read(make([]byte, 16))
	var ne net.Error
	if n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read = %d, %v; want timeout", n, err)
	}
}

func TestEcho(t *testing.T) {
	n := New(1)
	defer n.Close()
	l, err := n.Listen("a:7000")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	c, err := n.Node("b").DialContext(context.Background(), "a:7000")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RemoteAddr().String(); got != "a:7000" {
		t.Errorf("RemoteAddr = %q", got)
	}
	msg := []byte("hello, memnet")
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, c, len(msg), 5*time.Second); !bytes.Equal(got, msg) {
		t.Fatalf("echo = %q", got)
	}
	c.Close()
	wg.Wait()
	l.Close()
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close = %v", err)
	}
}

func TestOrderUnderDelay(t *testing.T) {
	n := New(2)
	defer n.Close()
	n.SetDelay("b", "a", time.Millisecond, 20*time.Millisecond)
	client, server := pair(t, n, "b", "a")
	start := time.Now()
	var want bytes.Buffer
	for i := range 200 {
		s := fmt.Sprintf("%04d;", i)
		want.WriteString(s)
		if _, err := client.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	got := readN(t, server, want.Len(), 10*time.Second)
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("out of order: %q", got[:60])
	}
	if time.Since(start) < time.Millisecond {
		t.Fatal("data arrived before the minimum delay")
	}
	client.Close()
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	if k, err := server.Read(make([]byte, 1)); k != 0 || err != io.EOF {
		t.Fatalf("after close: %d, %v; want EOF", k, err)
	}
	if _, err := server.Write([]byte("x")); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("write to closed peer = %v", err)
	}
}

func TestDeadlines(t *testing.T) {
	n := New(3)
	defer n.Close()
	client, server := pair(t, n, "b", "a")
	expectTimeout(t, server, 20*time.Millisecond)
	_ = server.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := server.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("past deadline: %v", err)
	}
	// A deadline set while a Read is blocked wakes it.
	errc := make(chan error, 1)
	_ = server.SetReadDeadline(time.Time{})
	go func() { _, err := server.Read(make([]byte, 1)); errc <- err }()
	_ = server.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if err := <-errc; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blocked read: %v", err)
	}
	// Write blocks only on a full buffer, and then honours its deadline.
	_ = client.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	k, err := client.Write(make([]byte, pipeCapacity+1))
	var ne net.Error
	if k != pipeCapacity || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("write = %d, %v; want %d, timeout", k, err, pipeCapacity)
	}
}

func TestPartitionHoldsAndHeals(t *testing.T) {
	n := New(4)
	defer n.Close()
	client, server := pair(t, n, "b", "a")
	n.Partition([]string{"a"}, []string{"b"})
	if _, err := client.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Write([]byte("back")); err != nil {
		t.Fatal(err)
	}
	expectTimeout(t, server, 50*time.Millisecond)
	expectTimeout(t, client, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := n.Node("b").DialContext(ctx, server.LocalAddr().String())
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("dial across partition = %v; want timeout", err)
	}
	// A host outside the partition still reaches both.
	if _, err := n.Node("c").DialContext(context.Background(), server.LocalAddr().String()); err != nil {
		t.Fatalf("dial from unnamed host: %v", err)
	}
	n.Heal()
	if got := readN(t, server, 4, 5*time.Second); string(got) != "held" {
		t.Fatalf("after heal: %q", got)
	}
	if got := readN(t, client, 4, 5*time.Second); string(got) != "back" {
		t.Fatalf("after heal: %q", got)
	}
}

func TestDropOneWay(t *testing.T) {
	n := New(5)
	defer n.Close()
	client, server := pair(t, n, "b", "a")
	n.DropOneWay("a", "b")
	_, _ = client.Write([]byte("b2a"))
	_, _ = server.Write([]byte("a2b"))
	if got := readN(t, server, 3, 5*time.Second); string(got) != "b2a" {
		t.Fatalf("b->a: %q", got)
	}
	expectTimeout(t, client, 50*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := n.Node("b").DialContext(ctx, server.LocalAddr().String()); err == nil {
		t.Fatal("dial with the reply direction cut succeeded")
	}
	n.Heal()
	if got := readN(t, client, 3, 5*time.Second); string(got) != "a2b" {
		t.Fatalf("a->b after heal: %q", got)
	}
}

func TestPauseResume(t *testing.T) {
	n := New(6)
	defer n.Close()
	client, server := pair(t, n, "b", "a")
	n.Pause("a")
	_, _ = client.Write([]byte("ping"))
	_, _ = server.Write([]byte("pong"))
	expectTimeout(t, server, 30*time.Millisecond)
	expectTimeout(t, client, 30*time.Millisecond)
	n.Resume("a")
	if got := readN(t, server, 4, 5*time.Second); string(got) != "ping" {
		t.Fatalf("%q", got)
	}
	if got := readN(t, client, 4, 5*time.Second); string(got) != "pong" {
		t.Fatalf("%q", got)
	}
}

func TestDialRefused(t *testing.T) {
	n := New(7)
	defer n.Close()
	start := time.Now()
	_, err := n.Node("b").DialContext(context.Background(), "a:9")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial = %v; want ECONNREFUSED", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("refusal was not immediate")
	}
	if _, err := n.Listen("a:9"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Listen("a:9"); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("second Listen = %v", err)
	}
	if _, err := n.Node("b").Listen("a:10"); err == nil {
		t.Fatal("Node.Listen on another host succeeded")
	}
}

func TestStreamLossDelaysButKeepsData(t *testing.T) {
	n := New(8)
	defer n.Close()
	n.SetLoss(0.3)
	client, server := pair(t, n, "b", "a")
	var want bytes.Buffer
	for i := range 20 {
		s := fmt.Sprintf("%03d|", i)
		want.WriteString(s)
		_, _ = client.Write([]byte(s))
	}
	if got := readN(t, server, want.Len(), 30*time.Second); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("got %q", got)
	}
}

func TestCloseJoinsEverything(t *testing.T) {
	n := New(9)
	l, err := n.Listen("a:1")
	if err != nil {
		t.Fatal(err)
	}
	idle, err := n.Listen("a:3")
	if err != nil {
		t.Fatal(err)
	}
	gt, err := n.GossipTransport("a:2")
	if err != nil {
		t.Fatal(err)
	}
	n.SetDelay("a", "a", time.Hour, time.Hour)
	if _, err := gt.WriteTo([]byte("late"), "a:2"); err != nil {
		t.Fatal(err)
	}
	n.SetDelay("a", "a", 0, 0)
	client, err := n.Node("b").DialContext(context.Background(), "a:1")
	if err != nil {
		t.Fatal(err)
	}
	n.Isolate("c")
	errs := make(chan error, 3)
	go func() { _, err := client.Read(make([]byte, 1)); errs <- err }()
	go func() { _, err := idle.Accept(); errs <- err }()
	go func() { _, err := n.Node("c").DialContext(context.Background(), "a:1"); errs <- err }()
	start := time.Now()
	n.Close() // must not wait for the packet due in an hour
	if time.Since(start) > 5*time.Second {
		t.Fatal("Close waited for a delayed packet")
	}
	for range 3 {
		if err := <-errs; !errors.Is(err, net.ErrClosed) && !errors.Is(err, ErrClosed) {
			t.Fatalf("blocked call returned %v; want closed", err)
		}
	}
	if _, err := n.Listen("a:4"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Listen after Close = %v", err)
	}
	if _, err := n.DialContext(context.Background(), "a:1"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Dial after Close = %v", err)
	}
	if _, err := n.GossipTransport("a:5"); !errors.Is(err, ErrClosed) {
		t.Fatalf("GossipTransport after Close = %v", err)
	}
	n.Close() // idempotent
	_ = l
}
