package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

type pingReq struct {
	Seq  int
	Text string
}

func TestCallRoundTrip(t *testing.T) {
	srv := newTestTransport(t, "srv", echo)
	cli := newTestTransport(t, "cli", nil)
	ctx := context.Background()
	for i := range 3 { // the second and third calls reuse the pooled conn
		var got pingReq
		want := pingReq{Seq: i, Text: "hello"}
		if err := cli.Call(ctx, srv.Addr(), "echo", want, &got); err != nil {
			t.Fatalf("Call: %v", err)
		}
		if got != want {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
	if err := cli.Call(ctx, srv.Addr(), "echo", pingReq{}, nil); err != nil {
		t.Fatalf("Call with nil resp: %v", err)
	}
	cli.mu.Lock()
	idle := len(cli.idle[srv.Addr()])
	cli.mu.Unlock()
	if idle != 1 {
		t.Fatalf("idle conns = %d, want 1", idle)
	}
}

func TestCallConcurrent(t *testing.T) {
	srv := newTestTransport(t, "srv", echo)
	cli := newTestTransport(t, "cli", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for g := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				want := pingReq{Seq: g*100 + i, Text: fmt.Sprint(g)}
				var got pingReq
				if err := cli.Call(ctx, srv.Addr(), "echo", want, &got); err != nil {
					errs <- err
					return
				}
				if got != want {
					errs <- fmt.Errorf("got %+v, want %+v", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	cli.mu.Lock()
	idle := len(cli.idle[srv.Addr()])
	cli.mu.Unlock()
	if idle > maxIdlePerAddr {
		t.Fatalf("idle conns = %d, want <= %d", idle, maxIdlePerAddr)
	}
}

func TestCallRemoteErrors(t *testing.T) {
	srv := newTestTransport(t, "srv", echo)
	cli := newTestTransport(t, "cli", nil)
	ctx := context.Background()
	cases := []struct{ method, code, msg string }{
		{"fail", "not_leader", "leader is n2"},
		{"oops", CodeInternal, "plain failure"},
		{"panic", CodeInternal, "handler panic: boom"},
		{"nope", "unknown_method", "nope"},
	}
	for _, tc := range cases {
		err := cli.Call(ctx, srv.Addr(), tc.method, nil, nil)
		var re *RemoteError
		if !errors.As(err, &re) {
			t.Fatalf("%s: err = %v, want *RemoteError", tc.method, err)
		}
		if re.Code != tc.code || re.Message != tc.msg {
			t.Fatalf("%s: got %+v, want code %q message %q", tc.method, re, tc.code, tc.msg)
		}
	}
	// A remote error does not poison the connection.
	var got string
	if err := cli.Call(ctx, srv.Addr(), "echo", "still fine", &got); err != nil || got != "still fine" {
		t.Fatalf("echo after errors: %q, %v", got, err)
	}
}

func TestCallNoHandler(t *testing.T) {
	srv := newTestTransport(t, "srv", nil)
	cli := newTestTransport(t, "cli", nil)
	err := cli.Call(context.Background(), srv.Addr(), "echo", 1, nil)
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != CodeUnavailable {
		t.Fatalf("err = %v, want code %s", err, CodeUnavailable)
	}
	srv.SetHandler(echo)
	var got int
	if err := cli.Call(context.Background(), srv.Addr(), "echo", 7, &got); err != nil || got != 7 {
		t.Fatalf("after SetHandler: %d, %v", got, err)
	}
}

func TestCallCancelAbortsBlockedCall(t *testing.T) {
	started := make(chan struct{}, 1)
	h := HandlerFunc(func(ctx context.Context, method string, body []byte) ([]byte, error) {
		started <- struct{}{}
		<-ctx.Done() // ends at Close, since the caller set no deadline
		return nil, ctx.Err()
	})
	srv := newTestTransport(t, "srv", h, func(c *Config) { c.DefaultCallTimeout = time.Minute })
	cli := newTestTransport(t, "cli", nil, func(c *Config) { c.DefaultCallTimeout = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cli.Call(ctx, srv.Addr(), "block", nil, nil) }()
	<-started
	begin := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if d := time.Since(begin); d > 5*time.Second {
			t.Fatalf("cancel took %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Call did not return after cancel")
	}
}

func TestCallDeadlineReachesHandler(t *testing.T) {
	srv := newTestTransport(t, "srv", echo)
	cli := newTestTransport(t, "cli", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := cli.Call(ctx, srv.Addr(), "block", nil, nil)
	var re *RemoteError
	if !errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &re) { // the handler's ctx may end first
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	// The server-side handler ended with the caller's deadline, so Close
	// (at cleanup) does not have to cancel it; check the server still serves.
	var got int
	if err := cli.Call(context.Background(), srv.Addr(), "echo", 3, &got); err != nil || got != 3 {
		t.Fatalf("echo: %d, %v", got, err)
	}
}

func TestCallClosedAddress(t *testing.T) {
	srv := newTestTransport(t, "srv", echo)
	addr := srv.Addr()
	cli := newTestTransport(t, "cli", nil)
	var got int
	if err := cli.Call(context.Background(), addr, "echo", 1, &got); err != nil {
		t.Fatalf("Call: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The first call may use the pooled conn (now dead); both must fail.
	for i := range 2 {
		if err := cli.Call(ctx, addr, "echo", 1, &got); err == nil {
			t.Fatalf("call %d to closed address succeeded", i)
		}
	}
}

func TestCallAfterClose(t *testing.T) {
	srv := newTestTransport(t, "srv", echo)
	cli := newTestTransport(t, "cli", nil)
	if err := cli.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cli.Call(context.Background(), srv.Addr(), "echo", 1, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

func TestCallFrameTooLarge(t *testing.T) {
	srv := newTestTransport(t, "srv", echo, func(c *Config) { c.MaxFrameSize = 4096 })
	cli := newTestTransport(t, "cli", nil, func(c *Config) { c.MaxFrameSize = 4096 })
	big := make([]byte, 8192)
	if err := cli.Call(context.Background(), srv.Addr(), "echo", big, nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err = %v, want ErrFrameTooLarge", err)
	}
	// A client allowing big frames: the server closes the conn.
	cli2 := newTestTransport(t, "cli2", nil)
	if err := cli2.Call(context.Background(), srv.Addr(), "echo", big, nil); err == nil {
		t.Fatal("oversized request accepted")
	}
	testkit.Eventually(t, "oversized frame counted", 10*time.Second, testkit.Holds(func() bool { return srv.Stats().OversizedFrames >= 1 }))
}

func TestCloseIdempotentAndReleases(t *testing.T) {
	started := make(chan struct{}, 1)
	srv := newTestTransport(t, "srv", HandlerFunc(func(ctx context.Context, m string, b []byte) ([]byte, error) {
		if m == "block" {
			started <- struct{}{}
		}
		return echo(ctx, m, b)
	}))
	cli := newTestTransport(t, "cli", nil)
	if err := cli.Call(context.Background(), srv.Addr(), "echo", 1, nil); err != nil {
		t.Fatal(err)
	}
	// A handler blocked at Close is cancelled, and Close waits for it.
	done := make(chan error, 1)
	go func() { done <- cli.Call(context.Background(), srv.Addr(), "block", nil, nil) }()
	<-started
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Close(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := <-done; err == nil {
		t.Fatal("blocked call succeeded across Close")
	}
	if n := srv.Stats().InboundConns; n != 0 {
		t.Fatalf("inbound conns after Close = %d", n)
	}
	if err := cli.Close(); err != nil {
		t.Fatal(err)
	}
	cli.mu.Lock()
	n := len(cli.conns)
	cli.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d conns tracked after Close", n)
	}
}

func TestNewValidates(t *testing.T) {
	bad := []Config{
		{},
		{BindAddr: "127.0.0.1:0", MaxFrameSize: -1},
		{BindAddr: "127.0.0.1:0", HandshakeTimeout: -1},
		{BindAddr: "127.0.0.1:0", LocalID: string(make([]byte, 256))},
		{BindAddr: "127.0.0.1:0", AdvertiseAddr: "no-port"},
	}
	for i, cfg := range bad {
		if tr, err := New(cfg); err == nil {
			_ = tr.Close()
			t.Errorf("config %d accepted", i)
		}
	}
	tr, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	_ = tr.Close()
}

func TestResponseTooLarge(t *testing.T) {
	big := HandlerFunc(func(ctx context.Context, m string, b []byte) ([]byte, error) {
		return Encode(make([]byte, 8192))
	})
	srv := newTestTransport(t, "srv", big, func(c *Config) { c.MaxFrameSize = 4096 })
	cli := newTestTransport(t, "cli", nil)
	err := cli.Call(context.Background(), srv.Addr(), "big", nil, nil)
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != CodeInternal {
		t.Fatalf("err = %v, want internal RemoteError", err)
	}
	if srv.Stats().OversizedFrames != 1 {
		t.Fatalf("stats %+v", srv.Stats())
	}
	// A client with a small limit drops a big response.
	srv2 := newTestTransport(t, "srv2", big)
	small := newTestTransport(t, "small", nil, func(c *Config) { c.MaxFrameSize = 4096 })
	if err := small.Call(context.Background(), srv2.Addr(), "big", nil, nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err = %v, want ErrFrameTooLarge", err)
	}
}
