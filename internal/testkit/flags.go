package testkit

import (
	"flag"
	"strconv"
)

// FlagGiven reports whether the command line set the flag name (after
// flag.Parse), so that a test binary's default can yield to an explicit
// value.
func FlagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// DefaultParallel sets go test's -parallel to n unless the command line
// gave it; for a TestMain, after flag.Parse, whose tests wait on timers
// more than they use the CPU. It panics if the flag is not registered
// (testing registers it before TestMain runs).
func DefaultParallel(n int) {
	if FlagGiven("test.parallel") {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
		panic(err)
	}
}
