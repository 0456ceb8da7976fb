// Package codec decodes msgpack from untrusted bytes safely: it checks the
// structure of the input (truncation, trailing bytes, nesting depth, element
// counts against the bytes left) before the msgpack decoder, which
// preallocates from declared lengths, ever sees it. Every decoder of bytes
// that crossed a network or a disk (RPC frames, raft commands, snapshots,
// gossip metadata) goes through it.
package codec
