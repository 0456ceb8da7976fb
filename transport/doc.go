// Package transport carries all of a holdfast node's stream traffic over one
// listener: the raft stream layer (for hashicorp/raft's NetworkTransport) and
// holdfast's own request/response RPC. It runs over any Network, so the same
// code runs on real TCP and on the in-memory network of package memnet.
//
// # Wire format
//
// Every connection starts with one kind byte.
//
//   - 'R' (raft): one length byte n, then n bytes of the target node ID,
//     then raft's own protocol. The receiver refuses (logs and closes) a
//     connection whose target ID differs from its Config.LocalID when both
//     are non-empty, so a node that reused another's address is never fed
//     that node's raft traffic. Raft addresses have the form "id@host:port"
//     (RaftAddress, SplitRaftAddress).
//   - 'P' (RPC): then frames in both directions, each a 4-byte big-endian
//     length and that many bytes of msgpack. A request is {ID, Method,
//     Timeout, Body, Cluster}, a response {ID, Code, Error, Body}; Code is
//     empty on success. Cluster is the caller's cluster ID
//     (Config.Cluster); a receiver that belongs to another cluster answers
//     CodeForeignCluster (Stats.ForeignCluster) unless the method is in
//     Config.AnyCluster. One request is in flight per connection; the server answers
//     requests of a connection in order.
//
// Any other kind byte is logged at Warn and the connection closed.
//
// # Mutual TLS
//
// With Config.TLS set, a client wraps every new connection in TLS 1.3
// before anything else, so its first byte is 0x16 (a TLS handshake record),
// never 'R' or 'P'. The server peeks at that byte: 0x16 starts a TLS
// handshake (within Config.HandshakeTimeout) in which the client must
// present a certificate signed by TLS.CAs; plaintext 'R' or 'P' is refused
// when TLS.Required is set and served as above when it is not. Inside TLS
// the client then sends:
//
//	kind byte ('R' or 'P')
//	n (1 byte), then n bytes: the client's node name (TLS.NodeName)
//	for 'R' only: m (1 byte), then m bytes: the target node ID, as above
//
// followed by raft's protocol or RPC frames as in plaintext. The server
// refuses a client whose certificate does not carry the name it sent as a
// DNS subject alternative name (Stats.WrongPeerName), and a raft target ID
// other than its own (Stats.WrongTarget). The client verifies the server's
// chain against TLS.CAs and, when TLS.PeerName knows which node lives at the
// address (and raft ID) it dials, that the server's certificate names that
// node; otherwise any node the CAs signed is accepted. A TLS client facing a
// peer that closes the connection on its ClientHello (a node without TLS)
// retries in plaintext only when TLS.Required is false. Every refusal is
// logged at Warn and counted in Stats. VerifyPeer proves, by a handshake
// alone, that the node at an address holds a certificate naming it; the
// coordinator uses it before adding a member to the raft configuration.
//
// # Limits
//
// Nothing a peer sends can make the transport panic or allocate without
// bound: the kind byte and raft header (and, with TLS, the TLS handshake
// and the client's name) must arrive within Config.HandshakeTimeout (read
// on a per-connection goroutine, so a silent peer never stalls accepting);
// a frame length above Config.MaxFrameSize closes the connection before any
// allocation; msgpack is checked structurally before decoding (see Decode);
// at most Config.MaxInboundConns inbound connections are open, and further
// ones are closed at once. Refusals are counted in Stats.
//
// # Concurrency and lifetime
//
// All methods of Transport are safe for concurrent use. Handler.ServeRPC is
// called concurrently, one goroutine per inbound connection, with a context
// that ends at the caller's deadline or at Close; the deadline travels as a
// remaining duration, so the two clocks need not agree. It does not end when
// the caller merely disconnects. Call
// keeps up to 4 idle connections per address and never retries. Close closes
// the listener and every connection, raft connections included, and waits
// for the transport's goroutines and running handlers; it is idempotent.
//
// # Not (yet) provided
//
// Without Config.TLS, connections are neither encrypted nor authenticated.
// With it, certificates are loaded once (rotating them means a new
// Transport) and revocation is not checked. Calls are not retried, so a
// call on a pooled connection to a peer that restarted fails once. Idle
// inbound RPC connections are not timed out. Counters are exposed only
// through Stats. The transport relies on the Network's connections
// honouring read and write deadlines, including deadlines in the past,
// which is how a cancelled Call is aborted.
package transport
