package leases

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/pause"
	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

// Retry commits cmd with commit, retrying with backoff while its outcome
// is unknown (the leader was lost mid-commit, a connection broke), until it
// commits, is refused (wire.ErrRejected, wire.ErrNoSession,
// wire.ErrLeaseHeld), the node shuts down (wire.ErrShutdown) or ctx ends. Use it for idempotent commands only (ones
// that carry their session and request ID): a retry of a command that did
// commit is answered the same way, so an acquire never mints two tokens.
func Retry(ctx context.Context, cmd fsm.Command, commit func(context.Context, fsm.Command) (Result, error),
	log *slog.Logger) (Result, error) {
	backoff := 20 * time.Millisecond
	for {
		res, err := commit(ctx, cmd)
		if err == nil || errors.Is(err, wire.ErrRejected) || errors.Is(err, wire.ErrNoSession) ||
			errors.Is(err, wire.ErrLeaseHeld) || errors.Is(err, wire.ErrShutdown) || ctx.Err() != nil {
			return res, err
		}
		log.Debug("command outcome unknown; retrying", "op", cmd.Op.String(), "error", err)
		if !pause.For(ctx, pause.Jitter(backoff)) {
			return res, err
		}
		backoff = min(2*backoff, time.Second)
	}
}

// retry commits cmd through the part's proposer with Retry.
func (p *Manager) retry(ctx context.Context, cmd fsm.Command) (Result, error) {
	return Retry(ctx, cmd, p.o.Proposer.Commit, p.o.Log)
}

// numbered returns a NextRequest over waitSession: it waits for this
// node's session, then numbers a request from one counter per part. It
// fails without numbering anything once ctx has ended: nothing was sent,
// so nothing needs settling.
func numbered(waitSession func(context.Context) (*session.Session, error)) func(context.Context) (*session.Session, uint64, error) {
	var seq atomic.Uint64
	return func(ctx context.Context) (*session.Session, uint64, error) {
		s, err := waitSession(ctx)
		if err != nil {
			return nil, 0, err
		}
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		return s, seq.Add(1), nil
	}
}
