package raftnode

import (
	"context"
	"errors"
	"testing"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// TestLeaderShutdownIsNotOursForwarded: a leader that answers a forwarded
// call with wire.CodeShutdown (it is closing) is reported as a change of
// leader, an outcome-unknown error, never as wire.ErrShutdown, which
// Commit's callers take to mean that this node shuts down: a lease
// request's retry or settlement that stopped on it left a grant of this
// node's live session that nobody on the node believed in or released.
// Once this node closes too, the answer stays wire.ErrShutdown.
func TestLeaderShutdownIsNotOursForwarded(t *testing.T) {
	leader, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	leader.SetHandler(transport.HandlerFunc(wire.NewDispatcher(func() bool { return true }).ServeRPC))
	follower, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()

	host, stop := context.WithCancel(context.Background())
	defer stop()
	n := &Node{opts: Options{Trans: follower, Context: host}}
	call := func() error {
		var res wire.ApplyResult
		return wire.FromRemote(n.CallLeader(context.Background(), leader.Addr(), wire.MethodApply, wire.ApplyRequest{Data: []byte("cmd")}, &res))
	}

	err = call()
	if errors.Is(err, wire.ErrShutdown) || !errors.Is(err, ErrLeaderChanged) {
		t.Fatalf("a closing leader's answer, this node running: %v; want ErrLeaderChanged, not wire.ErrShutdown", err)
	}
	stop()
	if err := call(); !errors.Is(err, wire.ErrShutdown) {
		t.Fatalf("a closing leader's answer, this node closing: %v; want wire.ErrShutdown", err)
	}
}
