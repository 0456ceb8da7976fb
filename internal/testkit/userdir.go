package testkit

import (
	"fmt"
	"os"
)

// OwnDir is the directory a test of this user takes in place of shared, a
// directory under the temporary directory that all users share, when
// shared belongs to another user and is not writable here: shared's path
// with "-<uid>" appended.
func OwnDir(shared string) string { return fmt.Sprintf("%s-%d", shared, os.Getuid()) }
