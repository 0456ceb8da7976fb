package tlsfiles

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// TestCheck: no TLS is refused unless insecure, naming the field TLS;
// material is checked as Load does.
func TestCheck(t *testing.T) {
	var fe *FieldError
	if err := Check(nil, false, "n"); !errors.As(err, &fe) || fe.Field != "TLS" || !strings.Contains(fe.Msg, "Config.Insecure") {
		t.Fatalf("Check(nil, secure) = %v; want a TLS field error naming Config.Insecure", err)
	}
	if err := Check(nil, true, "n"); err != nil {
		t.Fatalf("Check(nil, insecure) = %v", err)
	}
	_, src, r, _ := setup(t, 0)
	defer r.Stop()
	if err := Check(&src, false, "n"); err != nil {
		t.Fatalf("Check(good material) = %v", err)
	}
	if err := Check(&src, false, "other"); !errors.As(err, &fe) || fe.Field != "TLS.CertFile" {
		t.Fatalf("Check(certificate naming another node) = %v; want a TLS.CertFile field error", err)
	}
}

// TestTransport: without Options the transport runs in plaintext and there
// is no Reloader; with them it runs TLS (a plaintext caller is refused when
// RequireTLS is set); bad material is a FieldError, a bad address an
// RPCAddr error.
func TestTransport(t *testing.T) {
	plain, r, err := Transport(transport.Config{BindAddr: "127.0.0.1:0"}, nil, nil)
	if err != nil || r != nil {
		t.Fatalf("Transport(no TLS) = %v, reloader %v", err, r)
	}
	defer plain.Close()
	_, src, r0, _ := setup(t, 0)
	r0.Stop()
	secure, r, err := Transport(transport.Config{BindAddr: "127.0.0.1:0"}, &Options{Source: src, NodeName: "n"}, nil)
	if err != nil || r == nil {
		t.Fatalf("Transport(TLS) = %v, reloader %v", err, r)
	}
	defer secure.Close()
	defer r.Stop()
	secure.SetHandler(transport.HandlerFunc(func(context.Context, string, []byte) ([]byte, error) { return nil, nil }))
	if err := plain.Call(t.Context(), secure.Addr(), "m", struct{}{}, nil); err == nil {
		t.Fatal("a plaintext call reached a transport that requires TLS")
	}
	var fe *FieldError
	if _, _, err := Transport(transport.Config{BindAddr: "127.0.0.1:0"}, &Options{Source: src, NodeName: "x"}, nil); !errors.As(err, &fe) {
		t.Fatalf("Transport(certificate naming another node) = %v; want a FieldError", err)
	}
	if _, _, err := Transport(transport.Config{BindAddr: "no-port"}, nil, nil); err == nil || !strings.Contains(err.Error(), "RPCAddr") {
		t.Fatalf("Transport(bad address) = %v; want an RPCAddr error", err)
	}
}

// TestPeerName: the member with the raft ID wins; else the member
// advertising the address, an alive one before a failed one; else none.
func TestPeerName(t *testing.T) {
	mem := func(name, id, addr string, st membership.State) membership.Member {
		return membership.Member{Name: name, State: st, Meta: membership.Meta{NodeID: id, RPCAddr: addr}}
	}
	ms := []membership.Member{
		mem("old", "id-old", "10.0.0.1:1", membership.Failed),
		mem("new", "id-new", "10.0.0.1:1", membership.Alive),
		mem("gone", "id-gone", "10.0.0.2:1", membership.Failed),
	}
	for _, tc := range []struct {
		addr, id, want string
		ok             bool
	}{
		{"10.0.0.1:1", "id-old", "old", true},   // the raft ID names the node, whatever the address
		{"10.0.0.1:1", "", "new", true},         // the alive one of two at the address
		{"10.0.0.2:1", "", "gone", true},        // a failed one when it is the only one
		{"10.0.0.2:1", "id-new", "new", true},   // ID before address
		{"10.0.0.9:1", "", "", false},           // nobody there
		{"10.0.0.9:1", "id-unknown", "", false}, // unknown ID, unknown address
	} {
		if got, ok := PeerName(ms, tc.addr, tc.id); got != tc.want || ok != tc.ok {
			t.Errorf("PeerName(%s, %q) = %q, %v; want %q, %v", tc.addr, tc.id, got, ok, tc.want, tc.ok)
		}
	}
}
