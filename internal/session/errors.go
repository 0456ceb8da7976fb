package session

import (
	"errors"

	"github.com/holdfast-go/holdfast/internal/wire"
)

// ErrExpired is the cause a Session's context ends with when its deadline
// passes (or the cluster reports it gone): this node no longer believes in
// the session. The coordinator exports it as ErrSessionExpired.
var ErrExpired = errors.New("holdfast: session expired")

// ErrNoSession is returned for a keepalive that names a session the
// cluster no longer has, or one whose expiry the leader has decided. The
// coordinator exports it under the same name; it is the wire protocol's
// value, so a refusal from another node matches it too.
var ErrNoSession = wire.ErrNoSession

// ErrStale is Create's error for a create the cluster found older than a
// session of the node it already has (fsm.Result.Stale): it changed
// nothing.
var ErrStale = errors.New("holdfast: session create older than the node's current session")
