package coordinator

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// keyringFileName is the file in DataDir that holds the gossip keyring.
const keyringFileName = "gossip-keyring.json"

// keyringFile is the persisted gossip keyring. Keys[0] is the primary key.
//
// Generation counts the writes of the file, starting at 1. Config is the
// fingerprint of the Config.GossipKeys the writing node was started with:
// when a node starts with the same Config.GossipKeys, the file was written
// after the configuration last changed, so it is newer and wins (it holds
// the outcome of every rotation step since); when Config.GossipKeys
// differs, the operator changed the configuration after the file was
// written, so the configuration is newer and wins.
type keyringFile struct {
	Generation uint64   `json:"generation"`
	Config     string   `json:"config"`
	Keys       [][]byte `json:"keys"`
}

// keyringStore serialises keyring changes with their persistence, so the
// file always holds the keyring as of its last change.
type keyringStore struct {
	mu          sync.Mutex
	path        string // "" without a DataDir: memory only
	generation  uint64
	fingerprint string
}

// keysFingerprint names a list of keys, in order, without revealing them.
func keysFingerprint(keys [][]byte) string {
	h := sha256.New()
	var n [4]byte
	for _, k := range keys {
		binary.BigEndian.PutUint32(n[:], uint32(len(k)))
		h.Write(n[:])
		h.Write(k)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// initialGossipKeys returns the keys gossip starts with: the keyring in
// DataDir when it is newer than Config.GossipKeys (see keyringFile), else
// Config.GossipKeys, which are then written to DataDir. It fails on a
// keyring file that cannot be read or is malformed.
func (c *Coordinator) initialGossipKeys() ([][]byte, error) {
	ks := &c.keyring
	ks.fingerprint = keysFingerprint(c.cfg.GossipKeys)
	if c.cfg.DataDir == "" {
		if len(c.cfg.GossipKeys) > 0 {
			c.log.Info("gossip keyring kept in memory only (no DataDir): after a key rotation, restart this node with the current keys in Config.GossipKeys")
		}
		return c.cfg.GossipKeys, nil
	}
	ks.path = filepath.Join(c.cfg.DataDir, keyringFileName)
	b, err := os.ReadFile(ks.path)
	if errors.Is(err, fs.ErrNotExist) {
		if len(c.cfg.GossipKeys) == 0 {
			ks.path = "" // nothing to keep until gossip is encrypted
			return nil, nil
		}
		return c.cfg.GossipKeys, ks.write(c.cfg.GossipKeys)
	} else if err != nil {
		return nil, fieldErr("DataDir", "reading the gossip keyring: %v", err)
	}
	var f keyringFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fieldErr("DataDir", "the gossip keyring %s is malformed: %v", ks.path, err)
	}
	if err := (&Config{GossipKeys: f.Keys}).validateGossipKeys(); err != nil {
		return nil, fieldErr("DataDir", "the gossip keyring %s is invalid: %v", ks.path, err)
	}
	ks.generation = f.Generation
	if f.Config == ks.fingerprint {
		if len(f.Keys) > 0 {
			c.log.Info("gossip keyring loaded from DataDir: newer than Config.GossipKeys (unchanged since it was written)",
				"generation", f.Generation, "keys", len(f.Keys), "primary", keyID(f.Keys[0]))
		}
		return f.Keys, nil
	}
	c.log.Info("Config.GossipKeys changed since the keyring in DataDir was written: using Config.GossipKeys",
		"file_generation", f.Generation, "keys", len(c.cfg.GossipKeys))
	return c.cfg.GossipKeys, ks.write(c.cfg.GossipKeys)
}

// write persists keys as the next generation: a temporary file, fsync,
// rename and a directory fsync, mode 0600. Without a path it does nothing.
func (ks *keyringStore) write(keys [][]byte) error {
	if ks.path == "" {
		return nil
	}
	b, err := json.Marshal(keyringFile{Generation: ks.generation + 1, Config: ks.fingerprint, Keys: keys})
	if err != nil {
		return err
	}
	if err := writeFileSync(ks.path, b); err != nil {
		return fmt.Errorf("holdfast: persisting the gossip keyring: %w", err)
	}
	ks.generation++
	return nil
}
