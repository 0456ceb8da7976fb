package walog

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestRandomOperationsMatchAModel runs random appends, compactions, suffix
// deletions, full deletions and reopens against a model of the log (the
// range it must hold). A reopen may start the log earlier than the model
// after a compaction (see the package doc), never later. The seed is
// logged with the command that replays it (HOLDFAST_WALOG_SEED=s);
// HOLDFAST_WALOG_SEEDS=n runs n seeds.
func TestRandomOperationsMatchAModel(t *testing.T) {
	seeds := 3
	if s, err := strconv.Atoi(os.Getenv("HOLDFAST_WALOG_SEEDS")); err == nil && s > 0 {
		seeds = s
	}
	base := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("HOLDFAST_WALOG_SEED"), 10, 64); err == nil {
		base, seeds = s, 1
	}
	for k := range seeds {
		seed := base + uint64(k)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("replay: HOLDFAST_WALOG_SEED=%d go test ./internal/walog -run TestRandomOperationsMatchAModel", seed)
			runModel(t, rand.New(rand.NewPCG(seed, seed)))
		})
	}
}

func runModel(t *testing.T, rng *rand.Rand) {
	dir := t.TempDir()
	l := open(t, dir, int64(64+rng.IntN(512)))
	var first, last uint64
	for range 300 {
		switch op := rng.IntN(20); {
		case op < 12: // append a batch
			from := last + 1
			if last == 0 {
				from = uint64(1 + rng.IntN(1000))
			}
			to := from + uint64(rng.IntN(8))
			store(t, l, from, to)
			if first == 0 {
				first = from
			}
			last = to
		case op < 15 && last > first: // compact a prefix
			upTo := first + uint64(rng.IntN(int(last-first)))
			if err := l.DeleteRange(first, upTo); err != nil {
				t.Fatal(err)
			}
			first = upTo + 1
		case op < 18 && last > first: // drop a suffix
			from := first + 1 + uint64(rng.IntN(int(last-first)))
			if err := l.DeleteRange(from, last); err != nil {
				t.Fatal(err)
			}
			last = from - 1
		case op == 18 && last > 0: // drop everything
			if err := l.DeleteRange(first, last); err != nil {
				t.Fatal(err)
			}
			first, last = 0, 0
		default: // reopen
			l.Close()
			l = open(t, dir, int64(64+rng.IntN(512)))
			if got, _ := l.FirstIndex(); got != 0 && got < first {
				first = got
			}
		}
		wantRange(t, l, first, last)
	}
}
