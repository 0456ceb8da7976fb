//go:build holdfast_break_release

package fsm

// releaseUnchecked: this build is deliberately broken (build tag
// holdfast_break_release): a release gives up the session's grant whatever
// request it names, so a late or duplicated release of an earlier request
// frees a newer grant. Never ship it; TestSimulation must fail with it.
const releaseUnchecked = true
