//go:build !unix

package raftnode

import (
	"os"
	"path/filepath"
)

// lockFile is the file under raft/ a running node holds open.
const lockFile = "LOCK"

// lockDir opens dir's lock file. Without flock (systems that are not
// unix), it locks nothing: two nodes must not be given one data dir.
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
}
