// Package keyring rotates the gossip encryption keys of a whole cluster
// and persists a node's keyring across restarts.
//
// A rotation is three cluster-wide steps, each applied to every member
// gossip reports alive, this node locally and the others through one RPC
// (wire.MethodGossipKeyring) in parallel:
//
//  1. Install(new): every member accepts gossip encrypted with the new key.
//  2. Use(new): every member encrypts with it. Refused, with nothing
//     changed, while some live member lacks the key.
//  3. Remove(old): no member accepts the old key any more. Refused, with
//     nothing changed, while the key is some live member's primary key.
//
// Every step is idempotent; a step that failed on some member returns an
// error naming each member that failed, and is simply repeated.
//
// Store keeps a node's keyring in its data dir (FileName), rewritten
// atomically after every change. Open decides what gossip starts with: the
// file, when the node was started with the same configured keys as when
// the file was written (the file is newer), else the configured keys.
//
// The package reaches its neighbours through Options: the local gossip
// member (Gossip), a Caller for the RPC, a Store, a logger. It runs no
// goroutine beyond those of an operation in progress.
package keyring
