package raftnode

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/wire"
)

// fakeIdentities answers the guard's questions from a table of RPC
// addresses, counting them.
type fakeIdentities struct {
	mu    sync.Mutex
	nodes map[string]wire.IdentityReply
	asked map[string]int
}

func (f *fakeIdentities) ask(_ context.Context, addr string) (wire.IdentityReply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[addr]++
	rep, ok := f.nodes[addr]
	if !ok {
		return rep, errors.New("connection refused")
	}
	return rep, nil
}

func (f *fakeIdentities) count(addr string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[addr]
}

func appendFrom(id, addr string) *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte(id), Addr: []byte(id + "@" + addr)}}
}

// TestGuard checks the guard's verdicts: everything passes while this node
// knows no cluster; a sender in the configuration passes at once; any
// other is refused once and asked, then passes when it answers with this
// node's cluster and its own ID, and is refused with ErrForeignCluster,
// without being asked again for a while, when it belongs to another
// cluster, names another node or cannot be reached.
func TestGuard(t *testing.T) {
	var local string
	f := &fakeIdentities{asked: map[string]int{}, nodes: map[string]wire.IdentityReply{
		"10.0.0.2:1": {NodeID: "same", ClusterID: "A"},
		"10.0.0.3:1": {NodeID: "other", ClusterID: "B"},
		"10.0.0.4:1": {NodeID: "someone-else", ClusterID: "A"},
		"10.0.0.6:1": {NodeID: "fresh"},
	}}
	g := newGuard(func() string { return local }, f.ask, time.Second, slog.New(slog.DiscardHandler))
	defer g.stop()
	config := []raft.Server{{ID: "member"}}
	servers := func() []raft.Server { return config }
	g.servers.Store(&servers)

	if err := g.check(appendFrom("other", "10.0.0.3:1")); err != nil {
		t.Fatalf("no local cluster yet: %v", err)
	}
	if f.count("10.0.0.3:1") != 0 {
		t.Fatal("asked a sender while knowing no cluster")
	}
	local = "A"
	if err := g.check(appendFrom("member", "10.0.0.1:1")); err != nil {
		t.Fatalf("a sender in the configuration: %v", err)
	}
	if err := g.check(&raft.RequestVoteRequest{}); err != nil {
		t.Fatalf("a request without a sender ID: %v", err)
	}
	for _, tc := range []struct {
		id, addr string
		pass     bool
	}{
		{"same", "10.0.0.2:1", true},
		{"other", "10.0.0.3:1", false},
		{"impostor", "10.0.0.4:1", false},
		{"gone", "10.0.0.5:1", false},
		{"fresh", "10.0.0.6:1", false},
	} {
		req := appendFrom(tc.id, tc.addr)
		if err := g.check(req); !errors.Is(err, errUnverified) {
			t.Fatalf("%s: first contact: %v", tc.id, err)
		}
		g.wg.Wait() // the question is answered
		for range 3 {
			err := g.check(req)
			if tc.pass != (err == nil) || (!tc.pass && !errors.Is(err, wire.ErrForeignCluster)) {
				t.Fatalf("%s: %v, want pass %v", tc.id, err, tc.pass)
			}
		}
		if n := f.count(tc.addr); n != 1 {
			t.Fatalf("%s asked %d times", tc.id, n)
		}
	}
	// A refused sender that joins the configuration passes.
	config = append(config, raft.Server{ID: "other"})
	if err := g.check(appendFrom("other", "10.0.0.3:1")); err != nil {
		t.Fatalf("a refused sender now in the configuration: %v", err)
	}
	// Heartbeats and votes are checked the same way.
	vote := &raft.RequestVoteRequest{RPCHeader: raft.RPCHeader{ID: []byte("gone"), Addr: []byte("gone@10.0.0.5:1")}}
	if err := g.check(vote); !errors.Is(err, wire.ErrForeignCluster) {
		t.Fatalf("a vote request from a refused sender: %v", err)
	}
	// Five first contacts, three refusals each of the four refused, and the vote.
	if n := g.refused.Load(); n != 5+4*3+1 {
		t.Fatalf("refused counts %d", n)
	}
}

// TestGuardForward checks that forward hands raft only what the guard lets
// through and answers the rest with its error.
func TestGuardForward(t *testing.T) {
	g := newGuard(func() string { return "A" }, (&fakeIdentities{asked: map[string]int{}}).ask, time.Second, slog.New(slog.DiscardHandler))
	config := []raft.Server{{ID: "member"}}
	servers := func() []raft.Server { return config }
	g.servers.Store(&servers)
	in, out, stop := make(chan raft.RPC), make(chan raft.RPC), make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); g.forward(in, out, stop, nil) }()
	resp := make(chan raft.RPCResponse, 1)
	in <- raft.RPC{Command: appendFrom("stranger", "10.0.0.9:1"), RespChan: resp}
	if r := <-resp; !errors.Is(r.Error, errUnverified) {
		t.Fatalf("stranger answered %+v", r)
	}
	ok := raft.RPC{Command: appendFrom("member", "10.0.0.1:1"), RespChan: resp}
	in <- ok
	if got := <-out; got.Command != ok.Command {
		t.Fatalf("forwarded %+v", got)
	}
	close(stop)
	<-done
	g.stop()
}
