package coordinator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
	"github.com/holdfast-go/holdfast/transport"
)

// Gossip keyring errors. Cluster-wide calls wrap them in an error that names
// the nodes concerned.
var (
	// ErrGossipNotEncrypted is returned by InstallGossipKey, UseGossipKey
	// and RemoveGossipKey when this node, or a live member they reach, runs
	// without gossip encryption (empty Config.GossipKeys). Encryption cannot
	// be switched on at run time: restart the nodes with keys.
	ErrGossipNotEncrypted = errors.New("holdfast: gossip encryption is not enabled")
	// ErrInvalidGossipKey is returned by the gossip key methods for a key
	// that is not 16, 24 or 32 bytes long.
	ErrInvalidGossipKey = errors.New("holdfast: invalid gossip key")
	// ErrGossipKeyNotInstalled is returned by UseGossipKey when some live
	// member does not have the key installed; no node was changed.
	ErrGossipKeyNotInstalled = errors.New("holdfast: gossip key not installed")
	// ErrGossipKeyPrimary is returned by RemoveGossipKey when the key is the
	// primary key of some live member; no node was changed.
	ErrGossipKeyPrimary = errors.New("holdfast: gossip key is a primary key")
)

// validateGossipKeys checks Config.GossipKeys: AES key sizes, no duplicates.
func (c *Config) validateGossipKeys() error {
	for i, k := range c.GossipKeys {
		field := fmt.Sprintf("GossipKeys[%d]", i)
		if n := len(k); n != 16 && n != 24 && n != 32 {
			return fieldErr(field, "%d bytes; must be 16, 24 or 32", n)
		}
		for j := range i {
			if bytes.Equal(k, c.GossipKeys[j]) {
				return fieldErr(field, "duplicate of GossipKeys[%d]", j)
			}
		}
	}
	return nil
}

// Keyring operations carried by the methodGossipKeyring RPC.
const (
	keyringStatus  = wire.KeyringStatus // read-only: is the key installed, primary?
	keyringInstall = wire.KeyringInstall
	keyringUse     = wire.KeyringUse
	keyringRemove  = wire.KeyringRemove
)

// Remote error codes of the keyring RPC.
const (
	codeGossipNotEncrypted = wire.CodeGossipNotEncrypted
	codeGossipBadKey       = wire.CodeGossipBadKey
	codeGossipNotInstalled = wire.CodeGossipNotInstalled
	codeGossipPrimary      = wire.CodeGossipPrimary
)

// keyringRequest asks a node to apply Op with Key to its gossip keyring;
// keyringReply describes the node's keyring after it (no key material).
type (
	keyringRequest = wire.KeyringRequest
	keyringReply   = wire.KeyringReply
)

// keyringTarget is a live member a keyring operation is sent to.
type keyringTarget struct {
	name, addr string
	self       bool
}

// GossipKeys returns copies of this node's gossip keyring: the primary key,
// which encrypts outgoing gossip, and all keys accepted for incoming gossip,
// the primary first. Both are nil when gossip is not encrypted.
func (c *Coordinator) GossipKeys() (primary []byte, all [][]byte) {
	return c.members.Keys()
}

// InstallGossipKey adds key (16, 24 or 32 bytes) to the gossip keyring of
// every live member, this node included, so that all of them accept gossip
// encrypted with it; nobody encrypts with it yet. It is the first of the
// three steps of a key rotation without downtime:
//
//  1. InstallGossipKey(new): every node accepts the new key.
//  2. UseGossipKey(new): every node encrypts with it.
//  3. RemoveGossipKey(old): no node accepts the old key any more.
//
// Each step reaches the members gossip reports alive when it starts,
// through the RPC port, in parallel, each call bounded by ctx and
// Config.RPCTimeout; it is idempotent, so a step that failed on some node
// is simply repeated. The error names every node that failed, joined (use
// errors.Is with the sentinels). Members that are down, or that join while
// a step runs, miss it: start them with the current keys. The calls are not
// serialised across the cluster: run one rotation at a time, from one node.
//
// Security: the key travels in the RPC request, readable by anyone on the
// path and accepted from any peer unless the RPC port uses mutual TLS
// (Config.TLS); without TLS a warning is logged.
//
// Persistence: a node with a DataDir writes its keyring to
// DataDir/gossip-keyring.json after every step (atomically, mode 0600) and
// starts from it as long as its Config.GossipKeys is the one it was started
// with when the file was written, so a node restarted after a rotation
// rejoins with unchanged configuration; changing Config.GossipKeys makes
// the configuration win at the next start. A node without a DataDir keeps
// the keyring in memory only (it logs so) and, restarted later, needs the
// current keys in its Config.GossipKeys. Members that were down during a
// step missed it: start them with the current keys. Encryption cannot be
// switched on or off in a running cluster: keyed and plain nodes cannot
// gossip with each other.
//
// It returns ErrGossipNotEncrypted (wrapped) when this node or a member has
// no gossip encryption, ErrInvalidGossipKey for a key of the wrong size, and
// ErrShutdown after Shutdown or Close.
func (c *Coordinator) InstallGossipKey(ctx context.Context, key []byte) error {
	return c.changeGossipKeys(ctx, keyringInstall, key)
}

// UseGossipKey makes key the primary gossip key, the one outgoing gossip is
// encrypted with, on every live member (step 2 of a rotation, see
// InstallGossipKey). It first checks that every live member has the key
// installed and otherwise returns an error wrapping
// ErrGossipKeyNotInstalled that names the members lacking it, having
// changed nothing. Members switch one by one; while they do, each decrypts
// the others' gossip with either key. Other errors are as for
// InstallGossipKey.
func (c *Coordinator) UseGossipKey(ctx context.Context, key []byte) error {
	return c.changeGossipKeys(ctx, keyringUse, key)
}

// RemoveGossipKey removes key from the gossip keyring of every live member,
// which then drop gossip encrypted with it (step 3 of a rotation, see
// InstallGossipKey). It first checks that the key is no live member's
// primary key and otherwise returns an error wrapping ErrGossipKeyPrimary
// that names those members, having changed nothing. Removing a key a node
// does not have does nothing there. Other errors are as for
// InstallGossipKey.
func (c *Coordinator) RemoveGossipKey(ctx context.Context, key []byte) error {
	return c.changeGossipKeys(ctx, keyringRemove, key)
}

// changeGossipKeys applies op with key on every live member: checks first
// for use and remove, then the change itself.
func (c *Coordinator) changeGossipKeys(ctx context.Context, op string, key []byte) error {
	if c.closing() {
		return ErrShutdown
	}
	if !c.members.Encrypted() {
		return fmt.Errorf("%w on this node (%s)", ErrGossipNotEncrypted, c.cfg.NodeName)
	}
	if n := len(key); n != 16 && n != 24 && n != 32 {
		return fmt.Errorf("%w: %d bytes; must be 16, 24 or 32", ErrInvalidGossipKey, n)
	}
	if c.cfg.TLS == nil {
		c.log.Warn("sending a gossip key to every member over plaintext RPC; set Config.TLS",
			"op", op, "key", keyID(key))
	}
	targets := c.keyringTargets()
	if op == keyringUse || op == keyringRemove {
		if err := c.checkKeyring(ctx, op, key, targets); err != nil {
			return err
		}
	}
	if _, err := c.fanOutKeyring(ctx, targets, keyringRequest{Op: op, Key: key}); err != nil {
		return fmt.Errorf("holdfast: %s gossip key %s: %w", op, keyID(key), err)
	}
	c.log.Info("gossip keyring changed on every live member", "op", op, "key", keyID(key), "members", len(targets))
	return nil
}

// checkKeyring asks every target about key and refuses op when some target
// lacks it (use) or encrypts with it (remove).
func (c *Coordinator) checkKeyring(ctx context.Context, op string, key []byte, targets []keyringTarget) error {
	replies, err := c.fanOutKeyring(ctx, targets, keyringRequest{Op: keyringStatus, Key: key})
	if err != nil {
		return fmt.Errorf("holdfast: %s gossip key %s: checking the members first (nothing changed): %w", op, keyID(key), err)
	}
	var bad []string
	for i, r := range replies {
		if (op == keyringUse && !r.Installed) || (op == keyringRemove && r.Primary) {
			bad = append(bad, targets[i].name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sentinel := ErrGossipKeyNotInstalled
	if op == keyringRemove {
		sentinel = ErrGossipKeyPrimary
	}
	return fmt.Errorf("%w on %s (key %s); nothing changed", sentinel, strings.Join(bad, ", "), keyID(key))
}

// keyringTargets lists the members gossip reports alive, this node included.
func (c *Coordinator) keyringTargets() []keyringTarget {
	var out []keyringTarget
	for _, m := range c.members.Members() {
		if m.State != membership.Alive {
			continue
		}
		out = append(out, keyringTarget{name: m.Name, addr: m.Meta.RPCAddr, self: m.Name == c.cfg.NodeName})
	}
	return out
}

// fanOutKeyring sends req to every target in parallel and returns the
// replies in target order, with the failures joined, each naming its node.
func (c *Coordinator) fanOutKeyring(ctx context.Context, targets []keyringTarget, req keyringRequest) ([]keyringReply, error) {
	replies := make([]keyringReply, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			var err error
			replies[i], err = c.keyringCall(ctx, t, req)
			if err != nil {
				errs[i] = fmt.Errorf("%s (%s): %w", t.name, t.addr, err)
			}
		})
	}
	wg.Wait()
	return replies, errors.Join(errs...)
}

// keyringCall applies req on one target: locally for this node, by RPC
// otherwise.
func (c *Coordinator) keyringCall(ctx context.Context, t keyringTarget, req keyringRequest) (keyringReply, error) {
	if t.self {
		return c.applyKeyring(req)
	}
	if t.addr == "" {
		return keyringReply{}, errors.New("no RPC address in its gossip metadata")
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RPCTimeout)
	defer cancel()
	var r keyringReply
	err := c.trans.Call(ctx, t.addr, methodGossipKeyring, req, &r)
	return r, keyringFromRemote(err)
}

// serveKeyring handles an inbound methodGossipKeyring RPC.
func (c *Coordinator) serveKeyring(body []byte) ([]byte, error) {
	var req keyringRequest
	if err := transport.Decode(body, &req); err != nil {
		return nil, err
	}
	r, err := c.applyKeyring(req)
	if err != nil {
		return nil, keyringToRemote(err)
	}
	return transport.Encode(r)
}

// applyKeyring applies req to this node's keyring and describes the result.
func (c *Coordinator) applyKeyring(req keyringRequest) (keyringReply, error) {
	if !c.members.Encrypted() {
		return keyringReply{}, ErrGossipNotEncrypted
	}
	ks := &c.keyring
	ks.mu.Lock()
	defer ks.mu.Unlock()
	before, allBefore := c.members.Keys()
	var err error
	switch req.Op {
	case keyringStatus:
	case keyringInstall:
		err = c.members.InstallKey(req.Key)
	case keyringUse:
		err = c.members.UseKey(req.Key)
	case keyringRemove:
		err = c.members.RemoveKey(req.Key)
	default:
		return keyringReply{}, fmt.Errorf("unknown gossip keyring operation %q", req.Op)
	}
	switch {
	case errors.Is(err, membership.ErrNotEncrypted):
		return keyringReply{}, ErrGossipNotEncrypted
	case errors.Is(err, membership.ErrInvalidKey):
		return keyringReply{}, fmt.Errorf("%w: %d bytes; must be 16, 24 or 32", ErrInvalidGossipKey, len(req.Key))
	case errors.Is(err, membership.ErrKeyNotInstalled):
		return keyringReply{}, ErrGossipKeyNotInstalled
	case errors.Is(err, membership.ErrPrimaryKey):
		return keyringReply{}, ErrGossipKeyPrimary
	case err != nil:
		return keyringReply{}, err
	}
	primary, all := c.members.Keys()
	if !bytes.Equal(primary, before) || keysFingerprint(all) != keysFingerprint(allBefore) {
		if err := ks.write(all); err != nil {
			c.log.Error("gossip keyring changed but not persisted: a restart would lose the change", "error", err)
			return keyringReply{}, err
		}
	}
	r := keyringReply{
		Installed: slices.ContainsFunc(all, func(k []byte) bool { return bytes.Equal(k, req.Key) }),
		Primary:   bytes.Equal(primary, req.Key),
		Keys:      len(all),
	}
	if req.Op != keyringStatus {
		c.log.Info("gossip keyring changed", "op", req.Op, "key", keyID(req.Key), "keys", r.Keys)
	}
	return r, nil
}

// keyringCodes maps the keyring sentinels to remote error codes.
var keyringCodes = []struct {
	err  error
	code string
}{
	{ErrGossipNotEncrypted, codeGossipNotEncrypted},
	{ErrInvalidGossipKey, codeGossipBadKey},
	{ErrGossipKeyNotInstalled, codeGossipNotInstalled},
	{ErrGossipKeyPrimary, codeGossipPrimary},
}

// keyringToRemote maps keyring errors to wire errors.
func keyringToRemote(err error) error {
	for _, kc := range keyringCodes {
		if errors.Is(err, kc.err) {
			return &transport.RemoteError{Code: kc.code, Message: err.Error()}
		}
	}
	return toRemote(err)
}

// keyringFromRemote maps wire errors of the keyring RPC back to ours.
func keyringFromRemote(err error) error {
	var re *transport.RemoteError
	if errors.As(err, &re) {
		for _, kc := range keyringCodes {
			if re.Code == kc.code {
				// The message is the sentinel's text, then any detail.
				if detail := strings.TrimPrefix(re.Message, kc.err.Error()); detail != "" {
					return fmt.Errorf("%w%s", kc.err, detail)
				}
				return kc.err
			}
		}
	}
	return fromRemote(err)
}

// keyID names a key in logs and errors without revealing it: the first 4
// bytes of its SHA-256, in hex.
func keyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}
