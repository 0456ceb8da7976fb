package coordinator

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const identityFile = "node-id"

// newID returns a fresh random identifier (128 bits, hex).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// loadIdentity returns the node's identity: the one stored in dataDir, or a
// new one stored there for next time. Without a data dir every start is a
// new identity. The raft server ID is this identity, not the node name, so a
// node that comes back under the same name with an empty data dir is a new
// server to raft and cannot answer for the old one's vote.
func loadIdentity(dataDir string) (id string, fresh bool, err error) {
	if dataDir == "" {
		return newID(), true, nil
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", false, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	path := filepath.Join(dataDir, identityFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if len(id) != 32 {
			return "", false, fmt.Errorf("holdfast: DataDir: %s holds %q, not a node identity", path, id)
		}
		return id, false, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", false, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	id = newID()
	if err := writeFileSync(path, []byte(id+"\n")); err != nil {
		return "", false, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	return id, true, nil
}

// writeFileSync writes b to path atomically and durably.
func writeFileSync(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
