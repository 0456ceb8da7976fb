package session

import "errors"

// ErrExpired is the cause a Session's context ends with when its deadline
// passes (or the cluster reports it gone): this node no longer believes in
// the session. The coordinator exports it as ErrSessionExpired.
var ErrExpired = errors.New("holdfast: session expired")
