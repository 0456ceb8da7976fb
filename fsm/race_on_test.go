//go:build race

package fsm

// raceEnabled is true when the race detector is on. The seeded property
// tests (randomSeeds) then run an eighth of their seeds: they apply
// commands on one goroutine, where the detector has nothing to find, and
// the run without it checks every seed.
const raceEnabled = true
