// Package shardown will hold holdfast's shard assignment: a pure function
// from the live sessions (with weights and zones) and the current shard
// table to the target table and an ordered list of moves. It does no I/O,
// reads no clock and keeps no state.
//
// It is a placeholder until shard ownership is built (DESIGN.md §6).
package shardown
