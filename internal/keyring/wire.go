package keyring

import (
	"errors"
	"fmt"
	"strings"

	"github.com/holdfast-go/holdfast/transport"
)

// Method is the RPC method that carries keyring operations; it is part of
// the wire protocol.
const Method = "gossip.keyring"

// Keyring operations carried by Method (Request.Op); wire values.
const (
	OpStatus  = "status" // read-only: is the key installed, primary?
	OpInstall = "install"
	OpUse     = "use"
	OpRemove  = "remove"
)

// Remote error codes of Method, one per sentinel error; wire values.
const (
	CodeNotEncrypted = "gossip_not_encrypted"
	CodeBadKey       = "gossip_bad_key"
	CodeNotInstalled = "gossip_key_not_installed"
	CodePrimary      = "gossip_key_primary"
)

// The keyring's errors. Cluster-wide operations wrap them in an error that
// names the nodes concerned; they keep their identity across the RPC (see
// the codes above).
var (
	// ErrNotEncrypted: this node, or a member, runs without gossip
	// encryption.
	ErrNotEncrypted = errors.New("holdfast: gossip encryption is not enabled")
	// ErrInvalidKey: the key is not 16, 24 or 32 bytes long.
	ErrInvalidKey = errors.New("holdfast: invalid gossip key")
	// ErrNotInstalled: Use found a live member without the key.
	ErrNotInstalled = errors.New("holdfast: gossip key not installed")
	// ErrPrimary: Remove found a live member whose primary key it is.
	ErrPrimary = errors.New("holdfast: gossip key is a primary key")
)

// Request asks a node to apply Op with Key to its gossip keyring.
type Request struct {
	Op  string `msgpack:"op"`
	Key []byte `msgpack:"key"`
}

// Reply describes the node's keyring after the operation, relative to the
// request's key. It never carries key material.
type Reply struct {
	Installed bool `msgpack:"installed"`
	Primary   bool `msgpack:"primary"`
	Keys      int  `msgpack:"keys"`
}

// codes maps the sentinels to remote error codes.
var codes = []struct {
	err  error
	code string
}{
	{ErrNotEncrypted, CodeNotEncrypted},
	{ErrInvalidKey, CodeBadKey},
	{ErrNotInstalled, CodeNotInstalled},
	{ErrPrimary, CodePrimary},
}

// toRemote maps the sentinels to wire errors; other errors are returned
// as they are.
func toRemote(err error) error {
	for _, kc := range codes {
		if errors.Is(err, kc.err) {
			return &transport.RemoteError{Code: kc.code, Message: err.Error()}
		}
	}
	return err
}

// fromRemote maps the wire errors of Method back to the sentinels, keeping
// the remote detail; other errors are returned as they are.
func fromRemote(err error) error {
	var re *transport.RemoteError
	if errors.As(err, &re) {
		for _, kc := range codes {
			if re.Code == kc.code {
				// The message is the sentinel's text, then any detail.
				if detail := strings.TrimPrefix(re.Message, kc.err.Error()); detail != "" {
					return fmt.Errorf("%w%s", kc.err, detail)
				}
				return kc.err
			}
		}
	}
	return err
}
