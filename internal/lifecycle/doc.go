// Package lifecycle holds the machinery of a node's start and stop that
// knows none of its parts: the group of goroutines a stop joins (Group),
// duties run side by side and joined (Together), the metrics registered
// for the node's life (Register), and a graceful stop (Stop): its steps in
// order, which wait for a raft leader only so long (Steps) before they
// skip every step that must commit through one.
//
// It sees the node only through Options: a logger, the node's record of
// since when no raft leader has been known, and each step as a func. It
// never sees the coordinator, which decides which steps a stop takes.
package lifecycle
