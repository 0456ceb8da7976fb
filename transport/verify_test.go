package transport

import (
	"errors"
	"testing"
)

func TestVerifyPeer(t *testing.T) {
	ca, other := newCA(t, "cluster CA"), newCA(t, "other CA")
	srv := newTestTransport(t, "id-s", echo, tlsNode(t, ca, "srv", true, nil, nil))
	cli := newTestTransport(t, "id-c", echo, tlsNode(t, ca, "cli", true, nil, nil))
	if err := cli.VerifyPeer(t.Context(), srv.Addr(), "srv"); err != nil {
		t.Fatalf("VerifyPeer of the right node: %v", err)
	}
	if err := cli.VerifyPeer(t.Context(), srv.Addr(), "someone-else"); !errors.Is(err, ErrWrongPeer) {
		t.Fatalf("VerifyPeer naming another node: %v, want ErrWrongPeer", err)
	}
	foreign := newTestTransport(t, "id-f", echo, tlsNode(t, other, "srv2", true, nil, ca.Pool()))
	err := cli.VerifyPeer(t.Context(), foreign.Addr(), "srv2")
	if err == nil || errors.Is(err, ErrWrongPeer) || errors.Is(err, ErrPlaintextPeer) {
		t.Fatalf("VerifyPeer of another CA's node: %v, want a handshake failure", err)
	}
	plain := newTestTransport(t, "id-p", echo)
	if err := cli.VerifyPeer(t.Context(), plain.Addr(), "plain"); !errors.Is(err, ErrPlaintextPeer) {
		t.Fatalf("VerifyPeer of a plaintext node: %v, want ErrPlaintextPeer", err)
	}
	if err := plain.VerifyPeer(t.Context(), srv.Addr(), "srv"); !errors.Is(err, ErrNoTLS) {
		t.Fatalf("VerifyPeer without TLS: %v, want ErrNoTLS", err)
	}
	if st := cli.Stats(); st.WrongPeerName != 1 || st.TLSHandshakeFailures != 1 {
		t.Fatalf("client stats %+v, want 1 wrong name and 1 handshake failure", st)
	}
	// The verified node saw a well-formed client: nothing counted against it.
	if st := srv.Stats(); st.BadHandshakes != 0 {
		t.Fatalf("server counted %d bad handshakes", st.BadHandshakes)
	}
}
