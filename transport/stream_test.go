package transport

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

// newRaftTransport builds raft's real NetworkTransport over tr's stream layer.
func newRaftTransport(t *testing.T, tr *Transport) *raft.NetworkTransport {
	t.Helper()
	nt := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  tr.StreamLayer(),
		MaxPool: 2,
		Timeout: time.Second,
		Logger:  hclog.NewNullLogger(),
	})
	t.Cleanup(func() { _ = nt.Close() })
	return nt
}

// serveRaft answers AppendEntries and RequestVote on nt until stop closes.
func serveRaft(nt *raft.NetworkTransport, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case rpc := <-nt.Consumer():
			switch req := rpc.Command.(type) {
			case *raft.AppendEntriesRequest:
				rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.PrevLogEntry + uint64(len(req.Entries)), Success: true}, nil)
			case *raft.RequestVoteRequest:
				rpc.Respond(&raft.RequestVoteResponse{Term: req.Term, Granted: true}, nil)
			default:
				rpc.Respond(nil, errors.New("unexpected RPC"))
			}
		}
	}
}

func TestRaftRoundTrip(t *testing.T) {
	a := newTestTransport(t, "a", nil)
	b := newTestTransport(t, "b", nil)
	na, nb := newRaftTransport(t, a), newRaftTransport(t, b)
	if got, want := nb.LocalAddr(), RaftAddress(b.Addr(), "b"); got != want {
		t.Fatalf("LocalAddr = %q, want %q", got, want)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); serveRaft(nb, stop) }()
	defer func() { close(stop); <-done }()

	for i := range 3 {
		req := &raft.AppendEntriesRequest{
			RPCHeader:    raft.RPCHeader{ID: []byte("a"), Addr: []byte(na.LocalAddr())},
			Term:         7,
			PrevLogEntry: uint64(10 * i),
			Entries:      []*raft.Log{{Index: uint64(10*i + 1), Term: 7, Data: []byte("x")}},
		}
		var resp raft.AppendEntriesResponse
		if err := na.AppendEntries("b", nb.LocalAddr(), req, &resp); err != nil {
			t.Fatalf("AppendEntries: %v", err)
		}
		if !resp.Success || resp.Term != 7 || resp.LastLog != uint64(10*i+1) {
			t.Fatalf("AppendEntries response %+v", resp)
		}
	}
	var vote raft.RequestVoteResponse
	err := na.RequestVote("b", nb.LocalAddr(), &raft.RequestVoteRequest{Term: 8, LastLogIndex: 21}, &vote)
	if err != nil || !vote.Granted || vote.Term != 8 {
		t.Fatalf("RequestVote: %+v, %v", vote, err)
	}
}

func TestRaftWrongTargetRefused(t *testing.T) {
	a := newTestTransport(t, "a", nil)
	b := newTestTransport(t, "b", nil)
	na, nb := newRaftTransport(t, a), newRaftTransport(t, b)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); serveRaft(nb, stop) }()
	defer func() { close(stop); <-done }()

	// Raft's own transport: the RPC fails.
	var resp raft.AppendEntriesResponse
	err := na.AppendEntries("c", RaftAddress(b.Addr(), "c"), &raft.AppendEntriesRequest{Term: 1}, &resp)
	if err == nil {
		t.Fatal("AppendEntries to wrong node ID succeeded")
	}
	// A raw dial: the peer closes the connection after the header.
	c, err := a.StreamLayer().Dial(RaftAddress(b.Addr(), "c"), time.Second)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("Read after refused handshake = %d, %v; want EOF", n, err)
	}
	testkit.Eventually(t, "wrong target counted", 10*time.Second, testkit.Holds(func() bool { return b.Stats().WrongTarget >= 2 }))

	// The right ID still works, and so does an address without ID.
	for _, addr := range []raft.ServerAddress{RaftAddress(b.Addr(), "b"), RaftAddress(b.Addr(), "")} {
		if err := na.AppendEntries("b", addr, &raft.AppendEntriesRequest{Term: 2}, &resp); err != nil || !resp.Success {
			t.Fatalf("AppendEntries to %s: %+v, %v", addr, resp, err)
		}
	}
}

func TestStreamLayerClose(t *testing.T) {
	a := newTestTransport(t, "a", echo)
	s := a.StreamLayer()
	if got, want := s.Addr().String(), string(RaftAddress(a.Addr(), "a")); got != want {
		t.Fatalf("Addr = %q, want %q", got, want)
	}
	_ = s.Close()
	_ = s.Close()
	if _, err := s.Accept(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
	// A raft conn arriving now is closed; RPC keeps working.
	b := newTestTransport(t, "b", nil)
	c, err := b.StreamLayer().Dial(RaftAddress(a.Addr(), "a"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("Read = %v, want EOF", err)
	}
	if err := b.Call(t.Context(), a.Addr(), "echo", 1, nil); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	if _, err := b.StreamLayer().Dial(RaftAddress(a.Addr(), "a"), time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("Dial after Close: %v", err)
	}
}

func TestRaftAddress(t *testing.T) {
	cases := []struct {
		in       raft.ServerAddress
		addr, id string
		ok       bool
	}{
		{"n1@127.0.0.1:80", "127.0.0.1:80", "n1", true},
		{"127.0.0.1:80", "127.0.0.1:80", "", true},
		{"a@b@[::1]:9", "[::1]:9", "a@b", true},
		{"n1@nohost", "", "", false},
		{"", "", "", false},
		{raft.ServerAddress(string(make([]byte, 256)) + "@h:1"), "", "", false},
	}
	for _, tc := range cases {
		addr, id, err := SplitRaftAddress(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (addr != tc.addr || id != tc.id)) {
			t.Errorf("SplitRaftAddress(%q) = %q, %q, %v", tc.in, addr, id, err)
		}
		if !tc.ok && !errors.Is(err, ErrInvalidAddress) {
			t.Errorf("SplitRaftAddress(%q) error %v does not wrap ErrInvalidAddress", tc.in, err)
		}
		if tc.ok && RaftAddress(tc.addr, tc.id) != tc.in {
			t.Errorf("RaftAddress(%q, %q) = %q", tc.addr, tc.id, RaftAddress(tc.addr, tc.id))
		}
	}
}

func TestRaftConnNotAcceptedIsClosed(t *testing.T) {
	a := newTestTransport(t, "a", nil, func(c *Config) { c.HandshakeTimeout = 100 * time.Millisecond })
	b := newTestTransport(t, "b", nil)
	// Nobody calls a.StreamLayer().Accept: the conn is closed, not held.
	c, err := b.StreamLayer().Dial(RaftAddress(a.Addr(), "a"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("Read = %v, want EOF", err)
	}
	testkit.Eventually(t, "inbound slot released", 10*time.Second, testkit.Holds(func() bool { return a.Stats().InboundConns == 0 }))
}

// TestRaftResolverFollowsMovedNode: a raft address naming a node's old
// address reaches the node at the address the resolver gives for its ID
// (a voter restarted elsewhere); an ID the resolver does not know is dialled
// as given; and a resolver that points at another identity's address is
// refused by the raft header's target check.
func TestRaftResolverFollowsMovedNode(t *testing.T) {
	a := newTestTransport(t, "a", nil)
	b := newTestTransport(t, "b", nil)
	c := newTestTransport(t, "c", nil)
	na, nb, nc := newRaftTransport(t, a), newRaftTransport(t, b), newRaftTransport(t, c)
	stop := make(chan struct{})
	done := make(chan struct{}, 2)
	go func() { serveRaft(nb, stop); done <- struct{}{} }()
	go func() { serveRaft(nc, stop); done <- struct{}{} }()
	defer func() { close(stop); <-done; <-done }()

	stale := RaftAddress("127.0.0.1:1", "b") // b's old address: nothing listens there
	vote := func(target raft.ServerAddress, id raft.ServerID) error {
		var rep raft.RequestVoteResponse
		return na.RequestVote(id, target, &raft.RequestVoteRequest{Term: 3}, &rep)
	}
	if err := vote(stale, "b"); err == nil {
		t.Fatal("a vote request to b's old address succeeded without a resolver")
	}
	where := map[string]string{"b": b.Addr(), "x": c.Addr()}
	a.SetRaftResolver(func(id string) (string, bool) { addr, ok := where[id]; return addr, ok })
	if err := vote(stale, "b"); err != nil {
		t.Fatalf("vote request to b through the resolver: %v", err)
	}
	if err := vote(nc.LocalAddr(), "c"); err != nil {
		t.Fatalf("vote request to c, unknown to the resolver: %v", err)
	}
	before := c.Stats().WrongTarget
	if err := vote(RaftAddress("127.0.0.1:1", "x"), "x"); err == nil {
		t.Fatal("a vote request for x answered by c")
	}
	testkit.Eventually(t, "c to count the wrong target", 10*time.Second, testkit.Holds(func() bool { return c.Stats().WrongTarget > before }))
	a.SetRaftResolver(nil) // raft's pooled connection to b may still serve stale: not dialled again
	if err := vote(RaftAddress("127.0.0.1:2", "b"), "b"); err == nil {
		t.Fatal("a vote request to another stale address of b succeeded after the resolver was removed")
	}
}
