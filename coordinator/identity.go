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

// identityFile holds the node identity; nameFile the name of the node it
// was last used by (data dirs written before nameFile existed lack it: the
// first start adopts its name).
const (
	identityFile = "node-id"
	nameFile     = "node-name"
)

// newID returns a fresh random identifier (128 bits, hex).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// identity is what loadIdentity found in the data dir.
type identity struct {
	id          string
	fresh       bool   // created now
	renamedFrom string // the previous node name, when AllowRename renamed it
}

// loadIdentity returns the node's identity: the one stored in dataDir, or a
// new one stored there for next time. Without a data dir every start is a
// new identity. The raft server ID is this identity, not the node name, so a
// node that comes back under the same name with an empty data dir is a new
// server to raft and cannot answer for the old one's vote. A data dir last
// used under another name is refused unless allowRename.
func loadIdentity(dataDir, name string, allowRename bool) (identity, error) {
	if dataDir == "" {
		return identity{id: newID(), fresh: true}, nil
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return identity{}, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	path := filepath.Join(dataDir, identityFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := identity{id: strings.TrimSpace(string(b))}
		if len(id.id) != 32 {
			return identity{}, fmt.Errorf("holdfast: DataDir: %s holds %q, not a node identity", path, id.id)
		}
		id.renamedFrom, err = checkName(dataDir, name, allowRename)
		return id, err
	case !errors.Is(err, os.ErrNotExist):
		return identity{}, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	id := identity{id: newID(), fresh: true}
	if err := writeFileSync(path, []byte(id.id+"\n")); err != nil {
		return identity{}, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	if err := writeFileSync(filepath.Join(dataDir, nameFile), []byte(name+"\n")); err != nil {
		return identity{}, fmt.Errorf("holdfast: DataDir: %w", err)
	}
	return id, nil
}

// checkName compares name with the node name recorded in dataDir, and
// records name when there is none, or when it differs and allowRename;
// it returns the previous name after a rename.
func checkName(dataDir, name string, allowRename bool) (renamedFrom string, err error) {
	path := filepath.Join(dataDir, nameFile)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("holdfast: DataDir: %w", err)
	}
	prev := strings.TrimSpace(string(b))
	if err == nil && prev == name {
		return "", nil
	}
	if err == nil && !allowRename {
		return "", fieldErr("NodeName", "is %q, but DataDir %s holds the identity of node %q; "+
			"set Config.AllowRename to rename that node, or give this one another DataDir", name, dataDir, prev)
	}
	if err := writeFileSync(path, []byte(name+"\n")); err != nil {
		return "", fmt.Errorf("holdfast: DataDir: %w", err)
	}
	return prev, nil
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
