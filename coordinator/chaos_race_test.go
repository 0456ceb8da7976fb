//go:build race

package coordinator_test

// chaosRace is true when the race detector is on: TestChaos runs fewer
// seeds by default then.
const chaosRace = true
