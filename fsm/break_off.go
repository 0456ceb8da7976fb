//go:build !holdfast_break_release

package fsm

// releaseUnchecked is false in every real build. The build tag
// holdfast_break_release makes it true (see break_on.go): a deliberately
// broken FSM whose release skips its request check, for showing that the
// coordinator's simulation (TestSimulation) catches it.
const releaseUnchecked = false
