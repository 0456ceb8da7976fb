// Package viewstream turns the replica's sequence of views into a stream
// of values for a reader that may be slow: the coordinator's Watch (the
// shard table) and Observe (a lease's holder) are built on it.
package viewstream
