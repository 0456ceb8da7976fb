package coordinator

import (
	"context"

	"github.com/holdfast-go/holdfast/internal/wire"
)

// Gossip keyring errors. Cluster-wide calls wrap them in an error that names
// the nodes concerned.
var (
	// ErrGossipNotEncrypted is returned by InstallGossipKey, UseGossipKey
	// and RemoveGossipKey when this node, or a live member they reach, runs
	// without gossip encryption (empty Config.Gossip.Keys). Encryption cannot
	// be switched on at run time: restart the nodes with keys.
	ErrGossipNotEncrypted = wire.ErrGossipNotEncrypted
	// ErrInvalidGossipKey is returned by the gossip key methods for a key
	// that is not 16, 24 or 32 bytes long.
	ErrInvalidGossipKey = wire.ErrInvalidGossipKey
	// ErrGossipKeyNotInstalled is returned by UseGossipKey when some live
	// member does not have the key installed; no node was changed.
	ErrGossipKeyNotInstalled = wire.ErrGossipKeyNotInstalled
	// ErrGossipKeyPrimary is returned by RemoveGossipKey when the key is the
	// primary key of some live member; no node was changed.
	ErrGossipKeyPrimary = wire.ErrGossipKeyPrimary
)

// GossipKeys returns copies of this node's gossip keyring: the primary key,
// which encrypts outgoing gossip, and all keys accepted for incoming gossip,
// the primary first. Both are nil when gossip is not encrypted.
func (c *Coordinator) GossipKeys() (primary []byte, all [][]byte) { return c.members.Keys() }

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
// DataDir/gossip-keyring.json after every step and starts from it as long
// as its Config.Gossip.Keys is unchanged, so a node restarted after a
// rotation rejoins as it is; a node without a DataDir keeps the keyring in
// memory only (docs/SECURITY.md tells the rules). Encryption cannot be
// switched on or off in a running cluster.
//
// It returns ErrGossipNotEncrypted (wrapped) when this node or a member has
// no gossip encryption, ErrInvalidGossipKey for a key of the wrong size, and
// ErrShutdown after Shutdown or Close.
func (c *Coordinator) InstallGossipKey(ctx context.Context, key []byte) error {
	return c.gossipKeys.Install(ctx, key)
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
	return c.gossipKeys.Use(ctx, key)
}

// RemoveGossipKey removes key from the gossip keyring of every live member,
// which then drop gossip encrypted with it (step 3 of a rotation, see
// InstallGossipKey). It first checks that the key is no live member's
// primary key and otherwise returns an error wrapping ErrGossipKeyPrimary
// that names those members, having changed nothing. Removing a key a node
// does not have does nothing there. Other errors are as for
// InstallGossipKey.
func (c *Coordinator) RemoveGossipKey(ctx context.Context, key []byte) error {
	return c.gossipKeys.Remove(ctx, key)
}
