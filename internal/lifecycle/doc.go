// Package lifecycle holds the machinery of a node's start and stop that
// knows none of its parts: the group of goroutines a stop joins (Group),
// and the steps of a graceful stop (Steps), which wait for a raft leader
// only so long before they skip every step that must commit through one.
//
// It sees the node only through Options: a logger, and the node's record
// of since when no raft leader has been known. It never sees the
// coordinator, which decides what the steps are.
package lifecycle
