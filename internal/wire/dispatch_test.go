package wire

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/transport"
)

// serve calls d as the transport would and maps the answer back as a
// caller does.
func serve(d *Dispatcher, method string, body []byte) ([]byte, error) {
	rep, err := d.ServeRPC(context.Background(), method, body)
	return rep, FromRemote(err)
}

func remoteCode(t *testing.T, err error) string {
	t.Helper()
	var re *transport.RemoteError
	if !errors.As(err, &re) {
		t.Fatalf("%v (%T) is not a *transport.RemoteError", err, err)
	}
	return re.Code
}

func TestDispatcherUnknownMethodIsBadMethod(t *testing.T) {
	d := NewDispatcher(nil)
	d.Handle(MethodStats, func(context.Context, []byte) ([]byte, error) { return nil, nil })
	_, err := d.ServeRPC(context.Background(), "raft.nope", nil)
	if got := remoteCode(t, err); got != CodeBadMethod {
		t.Fatalf("unknown method: code %q, want %q", got, CodeBadMethod)
	}
}

func TestDispatcherRefusesWhileClosing(t *testing.T) {
	closing := false
	called := 0
	d := NewDispatcher(func() bool { return closing })
	d.Handle(MethodStats, func(context.Context, []byte) ([]byte, error) { called++; return []byte{1}, nil })
	if rep, err := serve(d, MethodStats, nil); err != nil || len(rep) != 1 || called != 1 {
		t.Fatalf("before closing: %v %v, %d calls", rep, err, called)
	}
	closing = true
	_, err := d.ServeRPC(context.Background(), MethodStats, nil)
	if got := remoteCode(t, err); got != CodeShutdown || !errors.Is(FromRemote(err), ErrShutdown) || called != 1 {
		t.Fatalf("while closing: code %q (%v), %d calls; want %q and no call", got, err, called, CodeShutdown)
	}
}

func TestDispatcherRefusesTwoHandlersForOneMethod(t *testing.T) {
	d := NewDispatcher(nil)
	d.Handle(MethodApply, func(context.Context, []byte) ([]byte, error) { return nil, nil })
	defer func() {
		if recover() == nil {
			t.Fatal("a second handler for raft.apply was accepted")
		}
	}()
	d.Handle(MethodApply, func(context.Context, []byte) ([]byte, error) { return nil, nil })
}

// TestHandlerErrorsCrossTheWire: what a handler returns reaches the caller
// as an error errors.Is finds the same protocol errors in, with the code
// for the most specific one.
func TestHandlerErrorsCrossTheWire(t *testing.T) {
	full := Wrap(ErrRejected, fmt.Errorf("%w: 2 of 2 permits of x held", fsm.ErrSemFull))
	limit := Wrap(ErrRejected, fmt.Errorf("%w: x has limit 1, not 3", fsm.ErrSemLimit))
	for _, tc := range []struct {
		name string
		err  error
		code string
		is   []error
	}{
		{"no session", Wrap(ErrRejected, ErrNoSession, errors.New("fsm: no such session")), CodeNoSession, []error{ErrNoSession}},
		{"lease held", Wrap(ErrRejected, ErrLeaseHeld), CodeLeaseHeld, []error{ErrLeaseHeld}},
		{"semaphore full", full, CodeSemFull, []error{ErrRejected, fsm.ErrSemFull}},
		{"semaphore limit", limit, CodeSemLimit, []error{ErrRejected, fsm.ErrSemLimit}},
		{"rejected", Wrap(ErrRejected, errors.New("fsm: bad command")), CodeRejected, []error{ErrRejected}},
		{"shutdown", ErrShutdown, CodeShutdown, []error{ErrShutdown}},
		{"busy", fmt.Errorf("%w: 512 forwarded commands pending", ErrBusy), CodeBusy, []error{ErrBusy}},
		{"leave refused", fmt.Errorf("%w: the last voter cannot leave", ErrLeaveRefused), CodeLeaveRefused, []error{ErrLeaveRefused}},
		{"foreign cluster", fmt.Errorf("%w: cluster A, not B", ErrForeignCluster), CodeForeignCluster, []error{ErrForeignCluster}},
		{"not leader", &NotLeaderError{Leader: "10.0.0.1:7000"}, CodeNotLeader, []error{ErrNotLeader}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDispatcher(nil)
			d.Handle(MethodApply, func(context.Context, []byte) ([]byte, error) { return nil, tc.err })
			raw, err := d.ServeRPC(context.Background(), MethodApply, nil)
			if raw != nil {
				t.Fatalf("a reply with the error: %v", raw)
			}
			if got := remoteCode(t, err); got != tc.code {
				t.Fatalf("code %q, want %q", got, tc.code)
			}
			back := FromRemote(err)
			for _, target := range tc.is {
				if !errors.Is(back, target) {
					t.Errorf("caller's error %q: errors.Is(%q) is false", back, target)
				}
			}
		})
	}
}

// TestNotLeaderKeepsTheLeaderAddress: the caller learns where the leader
// is.
func TestNotLeaderKeepsTheLeaderAddress(t *testing.T) {
	var nl *NotLeaderError
	back := FromRemote(ToRemote(fmt.Errorf("forwarding: %w", &NotLeaderError{Leader: "10.0.0.1:7000"})))
	if !errors.As(back, &nl) || nl.Leader != "10.0.0.1:7000" {
		t.Fatalf("%v: want a *NotLeaderError naming 10.0.0.1:7000", back)
	}
}

// TestEveryCodeRoundTrips: every code ToRemote can send comes back as an
// error with the same errors.Is target, so adding a code without its way
// back fails here.
func TestEveryCodeRoundTrips(t *testing.T) {
	for _, c := range codes {
		sent := ToRemote(fmt.Errorf("detail: %w", c.target))
		if got := remoteCode(t, sent); got != c.code {
			t.Errorf("%q is sent as %q, want %q", c.target, got, c.code)
		}
		if back := FromRemote(sent); !errors.Is(back, c.target) {
			t.Errorf("code %q comes back as %q, which is not %q", c.code, back, c.target)
		}
	}
}

// TestSemaphoreRefusalReadsTheSameOnBothSides: a forwarded refusal has the
// message it has on the leader, so the caller's error text does not depend
// on which node it asked.
func TestSemaphoreRefusalReadsTheSameOnBothSides(t *testing.T) {
	for _, kind := range []error{fsm.ErrSemFull, fsm.ErrSemLimit} {
		local := Wrap(ErrRejected, fmt.Errorf("%w: detail of %s", kind, kind))
		if back := FromRemote(ToRemote(local)); back.Error() != local.Error() {
			t.Errorf("forwarded refusal reads %q, local %q", back, local)
		}
	}
}

func TestOtherErrorsPassThrough(t *testing.T) {
	plain := errors.New("decode: truncated")
	if got := ToRemote(plain); got != plain {
		t.Fatalf("ToRemote changed an error without a code: %v", got)
	}
	if ToRemote(nil) != nil {
		t.Fatal("ToRemote(nil) is not nil")
	}
	other := &transport.RemoteError{Code: "custom", Message: "m"}
	if got := FromRemote(other); got != other {
		t.Fatalf("FromRemote changed an unknown code: %v", got)
	}
}

func TestTypedDecodesAndEncodes(t *testing.T) {
	h := Typed(func(_ context.Context, req KeepAliveRequest) (KeepAliveReply, error) {
		if req.Session == "" {
			return KeepAliveReply{}, ErrNoSession
		}
		return KeepAliveReply{Index: uint64(len(req.Session))}, nil
	})
	body, err := transport.Encode(KeepAliveRequest{Session: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := h(context.Background(), body)
	var rep KeepAliveReply
	if err != nil || transport.Decode(raw, &rep) != nil || rep.Index != 3 {
		t.Fatalf("reply %+v, err %v", rep, err)
	}
	if _, err := h(context.Background(), []byte{0xc1}); err == nil {
		t.Fatal("a body that is not msgpack was decoded")
	}
	empty, _ := transport.Encode(KeepAliveRequest{})
	if _, err := h(context.Background(), empty); !errors.Is(err, ErrNoSession) {
		t.Fatalf("the handler's error: %v", err)
	}
}

// TestKeyringRefusalReadsTheSameOnBothSides: a keyring refusal from
// another node keeps its sentinel and its detail.
func TestKeyringRefusalReadsTheSameOnBothSides(t *testing.T) {
	for _, target := range []error{ErrGossipNotEncrypted, ErrInvalidGossipKey, ErrGossipKeyNotInstalled, ErrGossipKeyPrimary} {
		for _, local := range []error{target, fmt.Errorf("%w: 7 bytes", target)} {
			back := FromRemote(ToRemote(local))
			if !errors.Is(back, target) || back.Error() != local.Error() {
				t.Errorf("%q comes back as %q", local, back)
			}
		}
	}
}
