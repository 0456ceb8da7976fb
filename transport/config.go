package transport

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults applied by New to zero Config fields.
const (
	// DefaultMaxFrameSize bounds one RPC frame (request or response body).
	DefaultMaxFrameSize = 1 << 20
	// DefaultHandshakeTimeout bounds reading the kind byte and header of an
	// inbound connection.
	DefaultHandshakeTimeout = 5 * time.Second
	// DefaultCallTimeout bounds a Call whose context has no deadline, and a
	// raft Dial given no timeout.
	DefaultCallTimeout = 10 * time.Second
	// DefaultMaxInboundConns bounds the open inbound connections.
	DefaultMaxInboundConns = 1024
	// MaxFrameSizeLimit is the largest accepted Config.MaxFrameSize.
	MaxFrameSizeLimit = 1 << 30
)

// Config configures a Transport. It is taken by value and never modified.
type Config struct {
	// Network carries the connections; nil means TCP().
	Network Network
	// BindAddr is the "host:port" to listen on, e.g. "127.0.0.1:0".
	BindAddr string
	// AdvertiseAddr is the "host:port" peers dial; empty means the
	// listener's address, and port 0 the listener's port.
	AdvertiseAddr string
	// LocalID is this node's identity. Inbound raft connections addressed
	// to another (non-empty) ID are refused. At most 255 bytes.
	LocalID string
	// Handler serves inbound RPC; it may be nil until SetHandler. Calls that
	// arrive while it is nil fail with CodeUnavailable.
	Handler Handler
	// MaxFrameSize bounds an RPC frame; a peer that announces a bigger one
	// has its connection closed. Zero means DefaultMaxFrameSize.
	MaxFrameSize int
	// HandshakeTimeout bounds reading the kind byte and header of an
	// inbound connection. Zero means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// DefaultCallTimeout is used when the context of Call has no deadline,
	// and bounds a server's write of a response. Zero means
	// DefaultCallTimeout.
	DefaultCallTimeout time.Duration
	// MaxInboundConns bounds the open inbound connections (raft and RPC);
	// connections beyond it are closed at once. Zero means
	// DefaultMaxInboundConns.
	MaxInboundConns int
	// Logger receives the transport's logs; nil discards them. Refused
	// connections and frames are logged at Warn, peer I/O errors at Debug.
	Logger *slog.Logger
	// Cluster, if set, returns the ID of the cluster this node belongs to
	// ("" while unknown). Every Call carries it, and an inbound call that
	// carries another (non-empty) cluster ID is refused with
	// CodeForeignCluster, unless its method is in AnyCluster. Calls from
	// nodes that send none (an earlier release, a node in no cluster yet)
	// are served.
	Cluster func() string
	// AnyCluster lists the methods served whatever cluster the caller
	// belongs to (a node's identity, which a leader asks before it admits
	// a node).
	AnyCluster []string
	// TLS, if set, turns on mutual TLS for raft and RPC in both directions
	// (see TLS and the package doc). Nil: plaintext only, and an inbound
	// TLS handshake is refused as an unknown connection kind.
	TLS *TLS
}

// DefaultConfig returns a Config listening on 127.0.0.1:0 over TCP with every
// default spelled out.
func DefaultConfig() Config {
	return Config{
		Network:            TCP(),
		BindAddr:           "127.0.0.1:0",
		MaxFrameSize:       DefaultMaxFrameSize,
		HandshakeTimeout:   DefaultHandshakeTimeout,
		DefaultCallTimeout: DefaultCallTimeout,
		MaxInboundConns:    DefaultMaxInboundConns,
	}
}

// validate reports the first invalid field.
func (c Config) validate() error {
	switch {
	case c.BindAddr == "":
		return errors.New("transport: Config.BindAddr is empty")
	case len(c.LocalID) > 255:
		return fmt.Errorf("transport: Config.LocalID is %d bytes, more than 255", len(c.LocalID))
	case c.MaxFrameSize < 0 || c.MaxFrameSize > MaxFrameSizeLimit:
		return fmt.Errorf("transport: Config.MaxFrameSize %d is outside [0, %d]", c.MaxFrameSize, MaxFrameSizeLimit)
	case c.HandshakeTimeout < 0:
		return fmt.Errorf("transport: Config.HandshakeTimeout %v is negative", c.HandshakeTimeout)
	case c.DefaultCallTimeout < 0:
		return fmt.Errorf("transport: Config.DefaultCallTimeout %v is negative", c.DefaultCallTimeout)
	case c.MaxInboundConns < 0:
		return fmt.Errorf("transport: Config.MaxInboundConns %d is negative", c.MaxInboundConns)
	case c.TLS != nil:
		return c.TLS.validate()
	}
	return nil
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.Network == nil {
		c.Network = TCP()
	}
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = DefaultMaxFrameSize
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.DefaultCallTimeout == 0 {
		c.DefaultCallTimeout = DefaultCallTimeout
	}
	if c.MaxInboundConns == 0 {
		c.MaxInboundConns = DefaultMaxInboundConns
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
