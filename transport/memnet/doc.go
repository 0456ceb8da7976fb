// Package memnet is an in-memory network with fault injection for testing
// holdfast: it gives the real raft.NetworkTransport, holdfast's RPC and
// memberlist a net.Conn-level path whose partitions, one-way drops, delays,
// loss and whole-host pauses are set by the test and drawn from a seeded
// generator.
//
// A Network is a value (New(seed)); nothing is global, so tests can run many
// networks in parallel.
//
// # Addressing
//
// Addresses are "host:port". The host part names the node that faults apply
// to: "n1:7000" (raft) and "n1:7001" (gossip) both belong to host "n1". A
// host is any non-empty string. Ports are per host and shared by streams and
// gossip, as TCP and UDP ports are shared by a real memberlist; port 0 picks
// a free one.
//
// memberlist advertises and routes by IP, so every host also has an IPv4
// form: an IP literal host ("10.0.0.1") is its own IP; any other name gets a
// fake address in 127.77.0.0/16 on first use (GossipTransport or IPAddr).
// The fake IP and the name are interchangeable everywhere (dial, listen,
// faults). Packets and streams never touch the real network. Do not use
// literal hosts in 127.77.0.0/16 yourself. Pass IPAddr's result to
// memberlist's Join: it cannot resolve bare host names.
//
// Network implements transport.Network and transport.GossipNetwork, but its
// DialContext dials from an anonymous host that faults do not name. A node
// under test should use Node(host), whose DialContext dials from that host.
//
// # Streams
//
// A stream (net.Conn) is reliable and ordered, like TCP. Each direction is a
// buffer of up to 4 MiB of unread data: Write returns once its bytes are
// queued and blocks only while the buffer is full (until the write deadline).
// A chunk written at t becomes readable at t plus the link delay, and never
// before earlier chunks. Read blocks until data is readable, EOF, the read
// deadline or Close. Deadline errors are *net.OpError wrapping
// os.ErrDeadlineExceeded (Timeout() is true). Close of one end makes the
// other read EOF after the queued data, and fail its later writes with
// ECONNRESET.
//
// While a direction is cut (Partition, Isolate, DropOneWay, Pause of either
// host) its data and EOF are held, not lost, as TCP retransmission would;
// they arrive once the link heals, and readers' deadlines fire meanwhile.
// Loss does not corrupt a stream: each chunk is "lost" with the loss
// probability up to 8 times in a row, each loss adding 200ms.
//
// Dialing an address without a listener fails at once with ECONNREFUSED.
// Dialing across a cut (either direction) waits until the link heals or the
// context ends (a passed deadline gives an error whose Timeout() is true),
// like a TCP handshake whose SYNs are lost. A handshake takes the round-trip
// delay of the link.
//
// # Packets
//
// memberlist packets are best effort: each is dropped if the link is cut when
// it is sent or when it would arrive, with the loss probability, or when the
// receiver's queue of 1024 packets is full; otherwise it arrives after the
// link delay. Packets may be reordered by random delays.
//
// # Faults
//
// Partition, Isolate and DropOneWay add cuts; Pause stops all traffic to and
// from a host ("as if SIGSTOPped" for the network: the host's goroutines keep
// running but see every peer as unreachable); Heal removes all cuts and
// pauses but keeps delay and loss settings. Traffic of a host to itself is
// cut only by Pause. Faults apply to traffic already in flight: held stream
// data waits, pending packets are dropped.
//
// # Determinism and shutdown
//
// Delays and losses come from a generator seeded by New's seed, so a failing
// seed reproduces the same fault draws; goroutine scheduling still differs
// between runs. All methods are safe for concurrent use. The network starts
// no goroutine per connection; Close closes every listener, connection and
// gossip transport and waits for pending packet deliveries.
package memnet
