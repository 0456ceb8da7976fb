package leases

import (
	"context"
	"errors"

	"github.com/holdfast-go/holdfast/internal/wire"
)

// ReleaseHeld releases this node's grant of the lease name with token, as
// its holder's Release would (the belief ends first, then the release
// commits), with cause as the belief's cause: it must wrap
// wire.ErrReleased. It reports false, doing nothing, when this node holds
// no such grant. It is how an operator's release reaches the holding node,
// so that the holder stops believing before anyone else is granted the
// lease.
func (p *Manager) ReleaseHeld(ctx context.Context, name string, token uint64, cause error) (bool, error) {
	if !errors.Is(cause, wire.ErrReleased) {
		cause = errors.Join(wire.ErrReleased, cause)
	}
	p.mu.Lock()
	var found *Grant
	for g := range p.grants {
		if g.kind == Lease && g.name == name && g.token == token {
			found = g
		}
	}
	p.mu.Unlock()
	if found == nil {
		return false, nil
	}
	return true, found.releaseWith(ctx, false, cause)
}
