package main

import (
	"os"
	"path/filepath"
)

// shownCertDir is how the usage names defaultCertDir.
const shownCertDir = "~/.holdfast/certs"

// defaultCertDir is where the cert commands write and where holdfastctl
// looks for its client certificate unless told otherwise: outside any
// source tree (a checkout's certs/ is a Go package), under the user's home
// directory. "" when the home directory is not known.
func defaultCertDir() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".holdfast", "certs")
}
