package raftnode

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestOldSnapshotRefused sends InstallSnapshot over loopback TCP, through
// the network transport, to a follower's transport whose raft has applied
// up to 100: a snapshot up to 50 is refused and never reaches raft, and
// the sender gets the refusal (its 8 MiB are read off the connection: left
// unread, the sender's write fails on the reset connection instead); an
// AppendEntries after it is served; a snapshot up to 100 and one up to 150
// reach raft, bytes intact.
func TestOldSnapshotRefused(t *testing.T) {
	follower := newLeaderTransport(t, time.Second)
	applied := func() uint64 { return 100 }
	follower.applied.Store(&applied)
	got, done, ended := make(chan uint64, 4), make(chan struct{}), make(chan struct{})
	go follower.run()
	go func() { // follower's raft: answer what reaches it
		defer close(ended)
		for {
			var rpc raft.RPC
			select {
			case rpc = <-follower.Consumer():
			case <-done:
				return
			}
			switch req := rpc.Command.(type) {
			case *raft.InstallSnapshotRequest:
				b, _ := io.ReadAll(rpc.Reader)
				if string(b) != strings.Repeat("s", int(req.Size)) {
					t.Errorf("snapshot %d reached raft with bytes %q", req.LastLogIndex, b)
				}
				got <- req.LastLogIndex
				rpc.Respond(&raft.InstallSnapshotResponse{Term: req.Term, Success: true}, nil)
			case *raft.AppendEntriesRequest:
				got <- 0
				rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, Success: true}, nil)
			}
		}
	}()
	t.Cleanup(func() { close(done); <-ended })
	leader := newLeaderTransport(t, time.Second)
	t.Cleanup(leader.CloseStreams)
	addr := follower.LocalAddr()
	send := func(index uint64) error {
		const size = 8 << 20 // more than the sockets buffer: unread, the sender could not finish sending
		req := &raft.InstallSnapshotRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax},
			SnapshotVersion: raft.SnapshotVersionMax, Term: 3, LastLogIndex: index, LastLogTerm: 3, Size: size}
		var resp raft.InstallSnapshotResponse
		return leader.InstallSnapshot("f", addr, req, &resp, bytes.NewReader(bytes.Repeat([]byte("s"), size)))
	}
	appendOne := func() {
		var resp raft.AppendEntriesResponse
		req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: 3}
		if err := leader.AppendEntries("f", addr, req, &resp); err != nil || !resp.Success {
			t.Fatalf("AppendEntries after the refusal: %v, %+v", err, resp)
		}
		if i := <-got; i != 0 {
			t.Fatalf("raft received snapshot %d, want the AppendEntries", i)
		}
	}
	if err := send(50); err == nil || !strings.Contains(err.Error(), "applied up to 100") {
		t.Fatalf("snapshot up to 50 after 100 applied: %v, want a refusal", err)
	}
	appendOne()
	for _, index := range []uint64{100, 150} {
		if err := send(index); err != nil {
			t.Fatalf("snapshot up to %d: %v", index, err)
		}
		if i := <-got; i != index {
			t.Fatalf("raft received %d, want snapshot %d", i, index)
		}
	}
	appendOne()
}
