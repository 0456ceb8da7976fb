package session

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errNotConfirmed is a confirmation round's failure: this node is not the
// leader of its term any more, or not enough voters said it still is.
var errNotConfirmed = errors.New("holdfast: leadership not confirmed")

// verify waits for a leadership confirmation round that started after the
// call (see ConfirmLoop).
func (l *Lessor) verify(ctx context.Context) error { return l.verifyOn(ctx, l.verifyReq) }

// verifyOn is verify through queue: verifyReq (a round at once) or
// spacedReq (a round once ConfirmSpacing has passed since the last).
func (l *Lessor) verifyOn(ctx context.Context, queue chan chan error) error {
	ch := make(chan error, 1)
	select {
	case queue <- ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ConfirmLoop batches leadership confirmations until ctx ends: every
// request queued when a round starts is answered by that round, so a
// burst of keepalives costs one round.
//
// Why not raft's VerifyLeader: hashicorp/raft counts a heartbeat response
// that arrives after VerifyLeader was called even when the heartbeat was
// sent before, so a leader that was frozen (SIGSTOP, a long GC pause) can
// resume, receive a keepalive, and have it "verified" by acknowledgements
// its followers sent before they elected a new leader, however long ago.
// Its answer would then let the holder believe past the new leader's
// deadline, and no grace period bounds that. A round here sends a fresh
// request to every voter after the keepalives it answers arrived; a voter
// says yes only if its current raft term is still this leader's term. A
// quorum of yes, this node included, proves that no newer leader had been
// elected when they answered (a newer leader needs a quorum of voters that
// moved to a later term, and quorums intersect).
//
// A round ends as soon as it has its quorum, but it does not cut off the
// questions still under way: each goes on until its answer or
// ConfirmTimeout, in the background. Cancelling one could abandon a
// connection in the middle of its TLS handshake, which the voter counts as
// a refused handshake (holdfast_transport_refused_total{reason=
// "tls_handshake"}) although nothing but the leader's own impatience was
// wrong; and the next round would have to dial again. A voter still
// answering an earlier question is not asked again (it counts as a no);
// ConfirmLoop waits for the questions in flight before it returns.
func (l *Lessor) ConfirmLoop(ctx context.Context) {
	defer l.questions.Wait()
	var last time.Time // the last round's start
	for {
		var batch []chan error
		select {
		case <-ctx.Done():
			return
		case ch := <-l.verifyReq:
			batch = append(batch, ch)
		case ch := <-l.spacedReq:
			batch = append(batch, ch)
			ok, prompt := l.spaced(ctx, last)
			if !ok {
				for _, ch := range batch {
					ch <- ctx.Err()
				}
				return
			}
			if prompt != nil {
				batch = append(batch, prompt)
			}
		}
		last = time.Now()
	drain:
		for {
			select {
			case ch := <-l.verifyReq:
				batch = append(batch, ch)
			case ch := <-l.spacedReq:
				batch = append(batch, ch)
			default:
				break drain
			}
		}
		err := l.confirmRound(ctx)
		for _, ch := range batch {
			ch <- err
		}
	}
}

// spaced waits until ConfirmSpacing has passed since last, or a request
// that may not wait arrives (returned); false when ctx ended first.
func (l *Lessor) spaced(ctx context.Context, last time.Time) (bool, chan error) {
	d := l.o.ConfirmSpacing - time.Since(last)
	if d <= 0 {
		return true, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true, nil
	case ch := <-l.verifyReq:
		return true, ch
	case <-ctx.Done():
		return false, nil
	}
}

// confirmRound asks every voter whether it is still in this leader's term;
// it succeeds once a majority of the voters (this node included) said yes.
func (l *Lessor) confirmRound(ctx context.Context) error {
	l.mu.Lock()
	term, active := l.term, l.active
	l.mu.Unlock()
	if !active || !l.o.Leading() || l.o.Term() != term {
		return errNotConfirmed
	}
	voters := l.o.Voters()
	need := len(voters)/2 + 1
	yes := make(chan bool, len(voters))
	ctx, cancel := context.WithTimeout(ctx, l.o.ConfirmTimeout)
	var asked []Voter
	for _, v := range voters {
		switch {
		case v.ID == l.o.Self:
			yes <- true
		case v.Addr == "" || !l.startQuestion(v.ID):
			yes <- false
		default:
			asked = append(asked, v)
		}
	}
	var questions sync.WaitGroup
	for _, v := range asked {
		questions.Go(func() {
			ok, err := l.o.Confirm(ctx, v, term)
			l.endQuestion(v.ID)
			yes <- err == nil && ok
		})
	}
	l.questions.Go(func() {
		questions.Wait()
		cancel() // the last answer came: the round's context is done
	})
	got, answered := 0, 0
	for answered < len(voters) && got < need {
		if <-yes {
			got++
		}
		answered++
	}
	if got < need {
		return errNotConfirmed
	}
	return nil
}

// startQuestion reports whether voter id may be asked now (no question of
// an earlier round is waiting for it), and marks it asked.
func (l *Lessor) startQuestion(id string) bool {
	l.asking.Lock()
	defer l.asking.Unlock()
	if l.askingVoter[id] {
		return false
	}
	l.askingVoter[id] = true
	return true
}

// questionPending reports whether a question to voter id is unanswered.
func (l *Lessor) questionPending(id string) bool {
	l.asking.Lock()
	defer l.asking.Unlock()
	return l.askingVoter[id]
}

func (l *Lessor) endQuestion(id string) {
	l.asking.Lock()
	defer l.asking.Unlock()
	delete(l.askingVoter, id)
}

// ConfirmedCommit is the leader's side of a consistent read: it takes
// commitIndex() when the request arrives (with the lessor active, so this
// term's barrier has applied every earlier term's entries), waits for a
// confirmation round that started after the arrival (no newer leader can
// have committed anything then), and returns that commit index. It fails
// with NotLeader's error when this node cannot answer as leader.
func (l *Lessor) ConfirmedCommit(ctx context.Context, commitIndex func() uint64) (uint64, error) {
	l.mu.Lock()
	active, epoch := l.active, l.epoch
	l.mu.Unlock()
	if !active {
		return 0, l.o.NotLeader()
	}
	commit := commitIndex()
	if err := l.verify(ctx); err != nil {
		return 0, l.o.NotLeader()
	}
	l.mu.Lock()
	same := l.active && l.epoch == epoch
	l.mu.Unlock()
	if !same {
		return 0, l.o.NotLeader()
	}
	return commit, nil
}
