package transport

import (
	"testing"
	"time"
)

// TestCloseWaitsForRaftHandlers checks that Close does not return while
// raft's reader of an inbound connection is handling a request it has
// read (raft answers heartbeats on that goroutine and writes its stable
// store there; a coordinator closes the stores once Close returns, and a
// heartbeat handled after that panicked in raft with "database not open").
func TestCloseWaitsForRaftHandlers(t *testing.T) {
	a := newTestTransport(t, "a", nil)
	b := newTestTransport(t, "b", nil)
	out, err := b.StreamLayer().Dial(RaftAddress(a.Addr(), "a"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	in, err := a.StreamLayer().Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := in.Read(buf); err != nil { // the reader now handles a request
		t.Fatal(err)
	}
	if got := a.raftHandlers.count(); got != 1 {
		t.Fatalf("%d raft requests being handled, want 1", got)
	}
	closed := make(chan struct{})
	go func() { _ = a.Close(); close(closed) }()
	// Close has closed the connections once a Write fails; it must still
	// be waiting for the handler.
	deadline := time.Now().Add(10 * time.Second)
	for !a.isClosed() {
		if time.Now().After(deadline) {
			t.Fatal("Close did not begin")
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
	select {
	case <-closed:
		t.Fatal("Close returned while a raft request was being handled")
	case <-time.After(100 * time.Millisecond): // a window in which a wrong Close would return
	}
	_ = in.Close() // raft's reader ends (it closes the connection)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return after the handler ended")
	}
	if got := a.raftHandlers.count(); got != 0 {
		t.Fatalf("%d raft requests being handled after Close, want 0", got)
	}
}
