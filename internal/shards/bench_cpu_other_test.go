//go:build !unix

package shards

import "time"

// processCPU returns 0 where getrusage is not available.
func processCPU() time.Duration { return 0 }
