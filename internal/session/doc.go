// Package session holds the session rules of holdfast on the holder's
// side: a node's session as the node believes in it (Session), the belief
// in a grant made under that session (Belief), and the clock both are
// measured on (Clock, SystemClock).
//
// A Session is valid until a deadline on its Clock, which counts the time
// the machine spends suspended; a timer ends it at that instant even if no
// message ever arrives, and every read of it looks at the clock too, so a
// node resumed from suspend sees its belief gone at once. A Belief derives
// its context from its session's and may be capped at the session's
// deadline of one moment (a revoked shard lease), after which keepalives
// no longer extend it.
package session
