package certs

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
)

// GossipKeySize is the size of the gossip keys NewGossipKey makes: 32
// bytes, AES-256.
const GossipKeySize = 32

// NewGossipKey returns a new random gossip encryption key (for
// coordinator.Config.Gossip.Keys) and its text form, base64 with a newline,
// as written to gossip.key files.
func NewGossipKey() (key, text []byte, err error) {
	key = make([]byte, GossipKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, nil, fmt.Errorf("certs: gossip key: %w", err)
	}
	return key, []byte(base64.StdEncoding.EncodeToString(key) + "\n"), nil
}

// ParseGossipKey decodes a gossip key in text form (base64, surrounding
// white space ignored) and checks it is 16, 24 or 32 bytes long.
func ParseGossipKey(text []byte) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(text)))
	if err != nil {
		return nil, fmt.Errorf("certs: gossip key is not base64: %w", err)
	}
	if n := len(key); n != 16 && n != 24 && n != 32 {
		return nil, fmt.Errorf("certs: gossip key is %d bytes; must be 16, 24 or 32", n)
	}
	return key, nil
}

// ReadGossipKeyFile reads and decodes a gossip key file (see NewGossipKey).
func ReadGossipKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	key, err := ParseGossipKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}
