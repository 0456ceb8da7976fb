package shards

import (
	"sync"
	"testing"
)

// TestSignal checks that a signal's channel closes when it fires whether
// it was waited on before, after or at the same time.
func TestSignal(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	isClosed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	var before signal
	c := before.wait()
	if isClosed(c) || before.fired() {
		t.Fatal("a signal that did not fire reads as fired")
	}
	before.fire(&closed)
	if !isClosed(c) || !before.fired() {
		t.Fatal("the channel taken before the signal fired is not closed")
	}
	var after signal
	after.fire(&closed)
	if !isClosed(after.wait()) || !after.fired() {
		t.Fatal("the channel taken after the signal fired is not closed")
	}
	for range 100 {
		var s signal
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); <-s.wait() }()
		go func() { defer wg.Done(); s.fire(&closed) }()
		wg.Wait() // a waiter left behind would hang here
	}
}
