package netns

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// TestCutAndHeal makes two namespaces, shows a TCP connection from one to
// the other, that a cut makes it time out, that a heal restores it, and
// that every namespace is gone after teardown.
func TestCutAndHeal(t *testing.T) {
	Require(t)
	var names []string
	t.Run("net", func(t *testing.T) {
		nt := New(t, 2)
		names = append(nt.names(), nt.hub)
		a, b := nt.Node(0), nt.Node(1)
		ln, err := b.Listen("tcp", b.Addr(7000))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		t.Cleanup(func() { ln.Close(); wg.Wait() })
		dial := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			c, err := a.DialContext(ctx, "tcp", b.Addr(7000))
			if err == nil {
				c.Close()
			}
			return err
		}
		reach := func(what string) {
			deadline := time.Now().Add(10 * time.Second)
			for err := dial(); err != nil; err = dial() {
				if time.Now().After(deadline) {
					t.Fatalf("%s: dial %s: %v", what, b.Addr(7000), err)
				}
				time.Sleep(50 * time.Millisecond) // polling for the link to come up
			}
		}
		reach("before the cut")
		b.Cut()
		if err := dial(); err == nil {
			t.Error("dial across a cut succeeded")
		}
		b.Heal()
		reach("after the heal")
	})
	for _, ns := range names {
		if _, err := os.Stat("/var/run/netns/" + ns); err == nil {
			t.Errorf("namespace %s left behind", ns)
		}
	}
}
