package keyring

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/holdfast-go/holdfast/internal/atomicfile"
)

// FileName is the file in the data dir that holds the gossip keyring.
const FileName = "gossip-keyring.json"

// file is the persisted gossip keyring. Keys[0] is the primary key.
//
// Generation counts the writes of the file, starting at 1. Config is the
// fingerprint of the configured keys the writing node was started with:
// when a node starts with the same configured keys, the file was written
// after the configuration last changed, so it is newer and wins (it holds
// the outcome of every rotation step since); when the configured keys
// differ, the operator changed the configuration after the file was
// written, so the configuration is newer and wins.
type file struct {
	Generation uint64   `json:"generation"`
	Config     string   `json:"config"`
	Keys       [][]byte `json:"keys"`
}

// FieldError is a configuration error: Msg says what is wrong with the
// configuration field Field (a data dir holding a bad keyring file is an
// error of "DataDir"). The caller wraps it in its own configuration error.
type FieldError struct {
	Field, Msg string
}

// Error returns "Field: Msg".
func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// ConfigField returns the field at fault and what is wrong with it.
func (e *FieldError) ConfigField() (field, msg string) { return e.Field, e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// CheckKeys checks configured gossip keys: each 16, 24 or 32 bytes long
// (AES-128, -192, -256), none repeated. Its error is a *FieldError naming
// GossipKeys[i].
func CheckKeys(keys [][]byte) error {
	for i, k := range keys {
		field := fmt.Sprintf("Gossip.Keys[%d]", i)
		if n := len(k); n != 16 && n != 24 && n != 32 {
			return fieldErr(field, "%d bytes; must be 16, 24 or 32", n)
		}
		for j := range i {
			if bytes.Equal(k, keys[j]) {
				return fieldErr(field, "duplicate of Gossip.Keys[%d]", j)
			}
		}
	}
	return nil
}

// Store persists the keyring: every Write is the next generation of the
// file, made with the fingerprint of the configured keys. It is not safe
// for concurrent use (Keyring serialises its writes with the changes they
// record). A Store without a path keeps nothing.
type Store struct {
	path        string // "" without a data dir: memory only
	generation  uint64
	fingerprint string
}

// FileOptions say where the keyring file lives and what the node was
// configured with.
type FileOptions struct {
	// DataDir holds the file; "" keeps the keyring in memory only.
	DataDir string
	// ConfigKeys are the configured gossip keys (validated by CheckKeys),
	// the primary first; empty when gossip is not encrypted.
	ConfigKeys [][]byte
	// Log receives what Open decided and why; nil discards.
	Log *slog.Logger
}

// Fingerprint names a list of keys, in order, without revealing them.
func Fingerprint(keys [][]byte) string {
	h := sha256.New()
	var n [4]byte
	for _, k := range keys {
		binary.BigEndian.PutUint32(n[:], uint32(len(k)))
		h.Write(n[:])
		h.Write(k)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Open returns the store and the keys gossip starts with: the file's keys
// when the file was written by a node started with the same ConfigKeys
// (it is newer), else ConfigKeys, which are then written as the file's
// next generation. Without a DataDir, or without keys and without a file,
// nothing is read or written. A file that cannot be read, is malformed or
// holds invalid keys fails with a *FieldError for "DataDir"; a failed
// write fails with an error saying the keyring could not be persisted.
func Open(o FileOptions) (*Store, [][]byte, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{fingerprint: Fingerprint(o.ConfigKeys)}
	if o.DataDir == "" {
		if len(o.ConfigKeys) > 0 {
			log.Info("gossip keyring kept in memory only (no DataDir): after a key rotation, restart this node with the current keys in Config.Gossip.Keys")
		}
		return s, o.ConfigKeys, nil
	}
	path := filepath.Join(o.DataDir, FileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if len(o.ConfigKeys) == 0 {
			return s, nil, nil // nothing to keep until gossip is encrypted
		}
		s.path = path
		return s, o.ConfigKeys, s.Write(o.ConfigKeys)
	} else if err != nil {
		return nil, nil, fieldErr("DataDir", "reading the gossip keyring: %v", err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, nil, fieldErr("DataDir", "the gossip keyring %s is malformed: %v", path, err)
	}
	if err := CheckKeys(f.Keys); err != nil {
		return nil, nil, fieldErr("DataDir", "the gossip keyring %s is invalid: %v", path, err)
	}
	s.path, s.generation = path, f.Generation
	if f.Config == s.fingerprint {
		if len(f.Keys) > 0 {
			log.Info("using the gossip keyring kept in DataDir: it holds the keys as last rotated, and Config.Gossip.Keys has not changed since it was written",
				"generation", f.Generation, "keys", len(f.Keys), "primary", KeyID(f.Keys[0]))
		}
		return s, f.Keys, nil
	}
	log.Info("Config.Gossip.Keys changed since the keyring in DataDir was written: using Config.Gossip.Keys",
		"file_generation", f.Generation, "keys", len(o.ConfigKeys))
	return s, o.ConfigKeys, s.Write(o.ConfigKeys)
}

// Write persists keys as the next generation, atomically and durably (see
// package atomicfile), mode 0600. Without a path it does nothing.
func (s *Store) Write(keys [][]byte) error {
	if s == nil || s.path == "" {
		return nil
	}
	b, err := json.Marshal(file{Generation: s.generation + 1, Config: s.fingerprint, Keys: keys})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.path, b); err != nil {
		return fmt.Errorf("holdfast: persisting the gossip keyring: %w", err)
	}
	s.generation++
	return nil
}

// Generation is the generation of the last write, or of the file Open
// read (0: none).
func (s *Store) Generation() uint64 { return s.generation }
