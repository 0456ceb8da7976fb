package coordinator

import (
	"math"
	"testing"
)

// A negative Shards.MaxMoves means no limit, as shardown's
// MaxMovesInFlight does; zero keeps its default.
func TestMaxMovesNegativeMeansNoLimit(t *testing.T) {
	cfg := DefaultLocalConfig()
	cfg.NodeName, cfg.Cluster.BootstrapExpect = "n", 0
	cfg.Shards.MaxMoves = -1
	if err := cfg.validate(); err != nil {
		t.Fatalf("MaxMoves -1: %v, want accepted", err)
	}
	for in, want := range map[int]int{-1: math.MaxInt, 0: 0, 3: 3} {
		if got := maxMoves(in); got != want {
			t.Errorf("maxMoves(%d) = %d, want %d", in, got, want)
		}
	}
}
