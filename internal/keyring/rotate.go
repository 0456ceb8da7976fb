package keyring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
)

// Gossip is this node's gossip member as the keyring needs it: its
// keyring and the members it knows. *membership.Membership implements it.
// The key methods fail with membership's sentinel errors
// (membership.ErrNotEncrypted, ErrInvalidKey, ErrKeyNotInstalled,
// ErrPrimaryKey), which the keyring translates to its own.
type Gossip interface {
	Encrypted() bool
	Keys() (primary []byte, all [][]byte)
	InstallKey(key []byte) error
	UseKey(key []byte) error
	RemoveKey(key []byte) error
	Members() []membership.Member
}

// Caller sends an RPC to another node (*transport.Transport implements
// it). Remote errors come back as *transport.RemoteError, possibly
// wrapped.
type Caller interface {
	Call(ctx context.Context, addr, method string, req, resp any) error
}

// Options are a Keyring's neighbours.
type Options struct {
	// NodeName is this node's gossip name: the member it reaches locally
	// rather than by RPC.
	NodeName string
	// Gossip is this node's gossip member.
	Gossip Gossip
	// Store persists every change of the local keyring; nil keeps it in
	// memory only.
	Store *Store
	// Caller reaches the other members' RPC ports.
	Caller Caller
	// Timeout bounds each RPC (within the caller's context); 0: only the
	// context does.
	Timeout time.Duration
	// Plaintext says the RPC port runs without TLS: sending a key is then
	// logged as a warning.
	Plaintext bool
	// Log receives the changes; nil discards.
	Log *slog.Logger
	// Closed, if set, is asked before every cluster-wide operation: an
	// error (the node is shutting down) is returned as it is.
	Closed func() error
}

// Keyring applies gossip key operations to this node's keyring (Apply,
// Serve) and to every live member's (Install, Use, Remove). It starts no
// goroutine of its own; each cluster-wide operation runs one per member
// and waits for them. Safe for concurrent use.
type Keyring struct {
	o  Options
	mu sync.Mutex // serialises local changes with their persistence
}

// New returns a Keyring over o.
func New(o Options) *Keyring {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Keyring{o: o}
}

// Keys returns copies of this node's keyring: the primary key and every
// accepted key, the primary first; nil, nil without encryption.
func (k *Keyring) Keys() (primary []byte, all [][]byte) { return k.o.Gossip.Keys() }

// Install adds key to the keyring of every live member, this node
// included (step 1 of a rotation: every node accepts the key; nobody
// encrypts with it yet).
func (k *Keyring) Install(ctx context.Context, key []byte) error {
	return k.change(ctx, wire.KeyringInstall, key)
}

// Use makes key the primary key of every live member (step 2). It first
// asks every live member and, when some lack the key, changes nothing and
// returns an error wrapping wire.ErrGossipKeyNotInstalled that names them.
func (k *Keyring) Use(ctx context.Context, key []byte) error {
	return k.change(ctx, wire.KeyringUse, key)
}

// Remove removes key from the keyring of every live member (step 3). It
// first asks every live member and, when it is the primary key of some,
// changes nothing and returns an error wrapping wire.ErrGossipKeyPrimary that names them.
func (k *Keyring) Remove(ctx context.Context, key []byte) error {
	return k.change(ctx, wire.KeyringRemove, key)
}

// target is a live member an operation is sent to.
type target struct {
	name, addr string
	self       bool
}

// change applies op with key on every live member: checks first for use
// and remove, then the change itself. Every failure names its member.
func (k *Keyring) change(ctx context.Context, op string, key []byte) error {
	if k.o.Closed != nil {
		if err := k.o.Closed(); err != nil {
			return err
		}
	}
	if !k.o.Gossip.Encrypted() {
		return fmt.Errorf("%w on this node (%s)", wire.ErrGossipNotEncrypted, k.o.NodeName)
	}
	if n := len(key); n != 16 && n != 24 && n != 32 {
		return fmt.Errorf("%w: %d bytes; must be 16, 24 or 32", wire.ErrInvalidGossipKey, n)
	}
	if k.o.Plaintext {
		k.o.Log.Warn("sending a gossip key to every member over plaintext RPC; set Config.TLS",
			"op", op, "key", KeyID(key))
	}
	targets := k.targets()
	if op == wire.KeyringUse || op == wire.KeyringRemove {
		if err := k.check(ctx, op, key, targets); err != nil {
			return err
		}
	}
	if _, err := k.fanOut(ctx, targets, wire.KeyringRequest{Op: op, Key: key}); err != nil {
		return fmt.Errorf("holdfast: %s gossip key %s: %w", op, KeyID(key), err)
	}
	k.o.Log.Info("gossip keyring changed on every live member", "op", op, "key", KeyID(key), "members", len(targets))
	return nil
}

// check asks every target about key and refuses op when some target
// lacks it (use) or encrypts with it (remove).
func (k *Keyring) check(ctx context.Context, op string, key []byte, targets []target) error {
	replies, err := k.fanOut(ctx, targets, wire.KeyringRequest{Op: wire.KeyringStatus, Key: key})
	if err != nil {
		return fmt.Errorf("holdfast: %s gossip key %s: checking the members first (nothing changed): %w", op, KeyID(key), err)
	}
	var bad []string
	for i, r := range replies {
		if (op == wire.KeyringUse && !r.Installed) || (op == wire.KeyringRemove && r.Primary) {
			bad = append(bad, targets[i].name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sentinel := wire.ErrGossipKeyNotInstalled
	if op == wire.KeyringRemove {
		sentinel = wire.ErrGossipKeyPrimary
	}
	return fmt.Errorf("%w on %s (key %s); nothing changed", sentinel, strings.Join(bad, ", "), KeyID(key))
}

// targets lists the members gossip reports alive, this node included.
func (k *Keyring) targets() []target {
	var out []target
	for _, m := range k.o.Gossip.Members() {
		if m.State != membership.Alive {
			continue
		}
		out = append(out, target{name: m.Name, addr: m.Meta.RPCAddr, self: m.Name == k.o.NodeName})
	}
	return out
}

// fanOut sends req to every target in parallel and returns the replies in
// target order, with the failures joined, each naming its node.
func (k *Keyring) fanOut(ctx context.Context, targets []target, req wire.KeyringRequest) ([]wire.KeyringReply, error) {
	replies := make([]wire.KeyringReply, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			var err error
			replies[i], err = k.call(ctx, t, req)
			if err != nil {
				errs[i] = fmt.Errorf("%s (%s): %w", t.name, t.addr, err)
			}
		})
	}
	wg.Wait()
	return replies, errors.Join(errs...)
}

// call applies req on one target: locally for this node, by RPC
// otherwise.
func (k *Keyring) call(ctx context.Context, t target, req wire.KeyringRequest) (wire.KeyringReply, error) {
	if t.self {
		return k.Apply(req)
	}
	if t.addr == "" {
		return wire.KeyringReply{}, errors.New("no RPC address in its gossip metadata")
	}
	if k.o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, k.o.Timeout)
		defer cancel()
	}
	var r wire.KeyringReply
	err := k.o.Caller.Call(ctx, t.addr, wire.MethodGossipKeyring, req, &r)
	return r, wire.FromRemote(err)
}
