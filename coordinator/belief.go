package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

//go:generate go run ../internal/grantgen

// belief is what leases, shard leases and permits share: a token and
// a context that ends the moment this node stops believing it holds the
// grant. Lease, Permit and ShardLease each declare its exported methods
// with their own doc, in grantmethods_gen.go (written by
// internal/grantgen); the belief's timing lives in life.
type belief struct {
	token  uint64
	life   *session.Belief // and the session the grant was made to
	margin time.Duration   // Config.Session.LeaseMargin, for Checkpoint
}

// Token returns the fencing token of this grant: larger than every token
// granted before it for this lease name or shard, across leader changes and
// restarts.
func (b *belief) Token() uint64 { return b.token }

// Done returns a channel closed when the lease ends.
func (b *belief) Done() <-chan struct{} { return b.life.Context().Done() }

// Context returns a context cancelled when the lease ends; context.Cause
// says why (ErrReleased, ErrRevoked, ErrSessionExpired, ErrLeaseLost,
// ErrShutdown).
func (b *belief) Context() context.Context { return b.life.Context() }

// Err returns nil while the lease is held, then why it ended. It reads
// the clock, so a holder resumed from suspend sees the lease ended at once.
func (b *belief) Err() error {
	b.life.Observe()
	return b.life.Cause()
}

// Remaining returns how long this node may still believe it holds the
// lease if no further keepalive is answered (0 once it ended).
func (b *belief) Remaining() time.Duration { return b.life.Observe() }

// errReleasedHere is Checkpoint's error once this node released the
// grant itself.
var errReleasedHere = fmt.Errorf("%w by this node", ErrReleased)

// Checkpoint returns nil if the lease is held with at least the margin
// left. Call it before every side effect; it fails with an error wrapping
// ErrReleased ("lease released by this node") after this node's Release,
// ErrLeaseLost once the lease ended otherwise, or an *ExpiringError
// (ErrLeaseExpiring) that says how much time is left when less than the
// margin is.
func (b *belief) Checkpoint() error {
	r := b.life.Observe()
	if err := b.life.Cause(); err == ErrReleased {
		return errReleasedHere // this node's own Release: not a loss
	} else if errors.Is(err, ErrReleased) {
		return err // released at an operator's request; the cause says so
	} else if err != nil {
		return wire.Wrap(ErrLeaseLost, err)
	}
	if r < b.margin {
		return &ExpiringError{Remaining: r, Margin: b.margin}
	}
	return nil
}

// endedAt returns when the belief ended by this node's own action, or the
// zero time (see session.Belief.EndedAt).
func (b *belief) endedAt() time.Time { return b.life.EndedAt() }
