package transport

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by Call and by the stream layer's Dial and Accept
// once the Transport (or, for Accept, the stream layer) has been closed.
var ErrClosed = errors.New("transport: closed")

// ErrFrameTooLarge is returned when a frame or a value to decode is larger
// than the configured limit: by Call when the encoded request exceeds
// Config.MaxFrameSize (nothing is sent then) or the response does (the
// connection is dropped), and by Decode when its input exceeds MaxDecodeSize.
// A server that reads an oversized length prefix closes the connection.
var ErrFrameTooLarge = errors.New("transport: frame too large")

// ErrInvalidAddress is returned (wrapped) by SplitRaftAddress and by the
// stream layer's Dial when an address is not of the form "id@host:port" or
// "host:port", or its node ID is longer than 255 bytes.
var ErrInvalidAddress = errors.New("transport: invalid address")

// ErrProtocol is returned (wrapped) by Call when the peer answered with
// something that is not a valid response frame; the connection is dropped.
var ErrProtocol = errors.New("transport: protocol error")

// ErrWrongPeer is returned (wrapped) by Call and by the stream layer's Dial
// when the server's certificate is signed by the CAs but does not name the
// node that Config.TLS.PeerName expects at the address.
var ErrWrongPeer = errors.New("transport: peer certificate names another node")

// ErrPlaintextPeer is returned (wrapped) by VerifyPeer when the peer closed
// the connection on the TLS ClientHello, as a node without TLS does.
var ErrPlaintextPeer = errors.New("transport: peer does not speak TLS")

// ErrNoTLS is returned by VerifyPeer on a Transport without Config.TLS:
// there is no identity to verify.
var ErrNoTLS = errors.New("transport: TLS is not configured")

// Error codes carried by RemoteError. Handlers may use any other code.
const (
	// CodeInternal is the code of a RemoteError built from a handler error
	// that was not a *RemoteError, or from a handler panic.
	CodeInternal = "internal"
	// CodeUnavailable is the code of a RemoteError returned when the peer has
	// no Handler set yet.
	CodeUnavailable = "unavailable"
	// CodeForeignCluster is the code of a RemoteError returned when the
	// caller and the receiver belong to different clusters (Config.Cluster).
	CodeForeignCluster = "foreign_cluster"
)

// RemoteError is the error Call returns when the remote handler returned an
// error. A handler that returns a *RemoteError (or an error wrapping one)
// chooses the Code; any other error arrives with Code CodeInternal and its
// Error() text as Message.
type RemoteError struct {
	Code    string
	Message string
}

// Error formats the error as "transport: remote error (code): message".
func (e *RemoteError) Error() string {
	return fmt.Sprintf("transport: remote error (%s): %s", e.Code, e.Message)
}

// toRemoteError maps a handler error to the code and message sent on the wire.
// The code is never empty, since an empty code means success.
func toRemoteError(err error) (code, msg string) {
	var re *RemoteError
	if errors.As(err, &re) && re != nil {
		code, msg = re.Code, re.Message
	} else {
		code, msg = CodeInternal, err.Error()
	}
	if code == "" {
		code = CodeInternal
	}
	return code, msg
}
