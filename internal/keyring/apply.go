package keyring

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// Serve handles an inbound wire.MethodGossipKeyring RPC: it decodes the
// request, applies it locally (see Apply) and encodes the reply. The
// keyring's refusals (wire.ErrGossip*, wire.ErrInvalidGossipKey)
// become *transport.RemoteError with their codes; other errors are
// returned as they are.
func (k *Keyring) Serve(body []byte) ([]byte, error) {
	var req wire.KeyringRequest
	if err := transport.Decode(body, &req); err != nil {
		return nil, err
	}
	r, err := k.Apply(req)
	if err != nil {
		return nil, wire.ToRemote(err)
	}
	return transport.Encode(r)
}

// Apply applies req to this node's keyring and describes the result. A
// change is persisted (Options.Store) before Apply returns; when that
// fails, the error says so (the change stays in memory). Status changes
// nothing. Installing a present key or removing an absent one is a no-op,
// so every operation may be repeated.
func (k *Keyring) Apply(req wire.KeyringRequest) (wire.KeyringReply, error) {
	g := k.o.Gossip
	if !g.Encrypted() {
		return wire.KeyringReply{}, wire.ErrGossipNotEncrypted
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	before, allBefore := g.Keys()
	var err error
	switch req.Op {
	case wire.KeyringStatus:
	case wire.KeyringInstall:
		err = g.InstallKey(req.Key)
	case wire.KeyringUse:
		err = g.UseKey(req.Key)
	case wire.KeyringRemove:
		err = g.RemoveKey(req.Key)
	default:
		return wire.KeyringReply{}, fmt.Errorf("unknown gossip keyring operation %q", req.Op)
	}
	switch {
	case errors.Is(err, membership.ErrNotEncrypted):
		return wire.KeyringReply{}, wire.ErrGossipNotEncrypted
	case errors.Is(err, membership.ErrInvalidKey):
		return wire.KeyringReply{}, fmt.Errorf("%w: %d bytes; must be 16, 24 or 32", wire.ErrInvalidGossipKey, len(req.Key))
	case errors.Is(err, membership.ErrKeyNotInstalled):
		return wire.KeyringReply{}, wire.ErrGossipKeyNotInstalled
	case errors.Is(err, membership.ErrPrimaryKey):
		return wire.KeyringReply{}, wire.ErrGossipKeyPrimary
	case err != nil:
		return wire.KeyringReply{}, err
	}
	primary, all := g.Keys()
	if !bytes.Equal(primary, before) || Fingerprint(all) != Fingerprint(allBefore) {
		if err := k.o.Store.Write(all); err != nil {
			k.o.Log.Error("gossip keyring changed but not persisted: a restart would lose the change", "error", err)
			return wire.KeyringReply{}, err
		}
	}
	r := wire.KeyringReply{
		Installed: slices.ContainsFunc(all, func(key []byte) bool { return bytes.Equal(key, req.Key) }),
		Primary:   bytes.Equal(primary, req.Key),
		Keys:      len(all),
	}
	if req.Op != wire.KeyringStatus {
		k.o.Log.Info("gossip keyring changed", "op", req.Op, "key", KeyID(req.Key), "keys", r.Keys)
	}
	return r, nil
}

// KeyID names a key in logs and errors without revealing it: the first 4
// bytes of its SHA-256, in hex.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}
