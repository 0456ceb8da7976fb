// Package wire is holdfast's RPC protocol between nodes: every method name,
// every request and reply type, every remote error code with the error it
// stands for on both sides, and one Dispatcher that routes an inbound call
// to the handler a part registered for its method.
//
// The names, msgpack field tags and code strings here are what travels
// between nodes: changing one changes the protocol. Parts register their
// handlers in a Dispatcher instead of calling each other, so none of them
// needs to know the others exist.
//
// Errors: a handler returns plain errors (ErrNotLeader, ErrBusy, a
// rejection wrapping fsm.ErrSemFull, ...); ToRemote turns them into a
// *transport.RemoteError with the matching code, and FromRemote, on the
// caller's side, turns that back into an error for which errors.Is finds
// the same sentinel.
package wire
