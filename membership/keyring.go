package membership

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/memberlist"
)

// ErrNotEncrypted is returned by InstallKey, UseKey and RemoveKey on a node
// started without Config.Keys: encryption cannot be switched on at run time.
var ErrNotEncrypted = errors.New("membership: gossip encryption is not enabled")

// ErrInvalidKey is wrapped by the error of InstallKey when the key is not 16,
// 24 or 32 bytes long.
var ErrInvalidKey = errors.New("membership: invalid gossip key")

// ErrKeyNotInstalled is returned by UseKey for a key that is not in the
// keyring.
var ErrKeyNotInstalled = errors.New("membership: gossip key not installed")

// ErrPrimaryKey is returned by RemoveKey for the primary key, the one
// outgoing gossip is encrypted with.
var ErrPrimaryKey = errors.New("membership: cannot remove the primary gossip key")

// checkKey reports whether key has an AES key size.
func checkKey(key []byte) error {
	if n := len(key); n != 16 && n != 24 && n != 32 {
		return fmt.Errorf("%d bytes; must be 16, 24 or 32", n)
	}
	return nil
}

// validateKeys checks Config.Keys: AES sizes and no duplicates.
func validateKeys(keys [][]byte) error {
	for i, k := range keys {
		if err := checkKey(k); err != nil {
			return fmt.Errorf("membership: Config.Keys[%d]: %w", i, err)
		}
		for j := range i {
			if bytes.Equal(k, keys[j]) {
				return fmt.Errorf("membership: Config.Keys[%d]: duplicate of Config.Keys[%d]", i, j)
			}
		}
	}
	return nil
}

// newKeyring builds memberlist's keyring from validated keys (copied, so
// the caller may reuse its slices); nil when keys is empty.
func newKeyring(keys [][]byte) (*memberlist.Keyring, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	own := make([][]byte, len(keys))
	for i, k := range keys {
		own[i] = bytes.Clone(k)
	}
	return memberlist.NewKeyring(own[1:], own[0])
}

// Encrypted reports whether this node encrypts and authenticates its
// gossip (Config.Keys was set).
func (m *Membership) Encrypted() bool { return m.keyring != nil }

// Keys returns copies of the keyring: the primary key, which encrypts
// outgoing gossip, and every key, the primary first, that incoming gossip
// may be encrypted with. Both are nil when gossip is not encrypted.
func (m *Membership) Keys() (primary []byte, all [][]byte) {
	if m.keyring == nil {
		return nil, nil
	}
	m.keyMu.Lock()
	defer m.keyMu.Unlock()
	for _, k := range m.keyring.GetKeys() {
		all = append(all, bytes.Clone(k))
	}
	if len(all) > 0 {
		primary = all[0]
	}
	return primary, all
}

// InstallKey adds key to the local keyring: incoming gossip encrypted with
// it is accepted from then on. The primary key does not change. Installing
// a key already present does nothing. It fails with ErrNotEncrypted on a node
// without encryption and with an error wrapping ErrInvalidKey for a key that
// is not 16, 24 or 32 bytes long.
func (m *Membership) InstallKey(key []byte) error {
	if m.keyring == nil {
		return ErrNotEncrypted
	}
	if err := checkKey(key); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	m.keyMu.Lock()
	defer m.keyMu.Unlock()
	return m.keyring.AddKey(bytes.Clone(key))
}

// UseKey makes key, which must be installed, the primary key: outgoing
// gossip is encrypted with it from then on. Every node this node gossips
// with must have it installed already, or they drop its messages. It fails
// with ErrNotEncrypted on a node without encryption and ErrKeyNotInstalled
// when key is not in the keyring.
func (m *Membership) UseKey(key []byte) error {
	if m.keyring == nil {
		return ErrNotEncrypted
	}
	m.keyMu.Lock()
	defer m.keyMu.Unlock()
	if !slices.ContainsFunc(m.keyring.GetKeys(), func(k []byte) bool { return bytes.Equal(k, key) }) {
		return ErrKeyNotInstalled
	}
	return m.keyring.UseKey(key)
}

// RemoveKey removes key from the keyring: gossip encrypted with it is
// dropped from then on. Removing a key that is not installed does nothing.
// It fails with ErrNotEncrypted on a node without encryption and with
// ErrPrimaryKey for the primary key (make another key primary first).
func (m *Membership) RemoveKey(key []byte) error {
	if m.keyring == nil {
		return ErrNotEncrypted
	}
	m.keyMu.Lock()
	defer m.keyMu.Unlock()
	keys := m.keyring.GetKeys()
	i := slices.IndexFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) })
	switch {
	case i < 0:
		return nil
	case i == 0:
		return ErrPrimaryKey
	}
	// memberlist's Keyring.RemoveKey shifts the keys after the removed one
	// down in place, in the very array that packet decryption iterates
	// without the keyring's lock: a data race. Removing the last key shifts
	// nothing, so the keys after this one are taken off (last first) and put
	// back in order afterwards. Those keys are missing for a few
	// microseconds; in a rotation (install, use, remove the old key) the old
	// key is the last one and nothing is moved.
	tail := slices.Clone(keys[i+1:])
	for j := len(tail) - 1; j >= 0; j-- {
		if err := m.keyring.RemoveKey(tail[j]); err != nil {
			return err
		}
	}
	err := m.keyring.RemoveKey(key)
	for _, k := range tail {
		err = errors.Join(err, m.keyring.AddKey(k))
	}
	return err
}
