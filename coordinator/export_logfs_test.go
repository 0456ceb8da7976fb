package coordinator

import "github.com/holdfast-go/holdfast/internal/walog"

// SetLogFS makes the node of c keep its raft write-ahead log on fs (the
// rest of its data dir stays on disk): TestSimulation's in-memory disks.
func SetLogFS(c *Config, fs walog.FS) { c.logFS = fs }
