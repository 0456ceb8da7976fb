package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// auditEvery is how often the auditor checks the ledger.
const auditEvery = time.Second

// auditor campaigns for the auditor lease and, while it holds it, audits
// the ledger every auditEvery.
type auditor struct {
	c       *coordinator.Coordinator
	led     *ledger
	out     *printer
	log     *slog.Logger
	metrics *metrics

	cancel context.CancelFunc
	done   chan struct{}
}

func startAuditor(c *coordinator.Coordinator, led *ledger, out *printer, log *slog.Logger, m *metrics) *auditor {
	ctx, cancel := context.WithCancel(context.Background())
	a := &auditor{c: c, led: led, out: out, log: log, metrics: m, cancel: cancel, done: make(chan struct{})}
	go a.run(ctx)
	return a
}

// stop ends the auditor and waits for it. The lease itself ends with the
// session, at Shutdown.
func (a *auditor) stop() {
	a.cancel()
	<-a.done
}

// run campaigns, holds the lease until it is lost, and campaigns again.
func (a *auditor) run(ctx context.Context) {
	defer close(a.done)
	for ctx.Err() == nil {
		l, err := a.c.Acquire(ctx, auditorLease)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("campaigning for the auditor lease", "error", err)
				sleep(ctx, auditEvery)
			}
			continue
		}
		a.out.say("auditor", "token", l.Token())
		a.hold(ctx, l)
		a.out.say("auditor-lost", "token", l.Token())
	}
}

// hold audits every auditEvery while l is held.
func (a *auditor) hold(ctx context.Context, l *coordinator.Lease) {
	var st auditState
	tick := time.NewTicker(auditEvery)
	defer tick.Stop()
	for first := true; ; first = false {
		select {
		case <-ctx.Done():
			return
		case <-l.Done():
			return
		case <-tick.C:
		}
		r, err := a.led.audit(ctx, l.Token(), l.Checkpoint, &st)
		switch {
		case err != nil:
			if _, fenced := asFenced(err); fenced || errors.Is(err, coordinator.ErrLeaseLost) {
				a.log.Warn("audit not recorded; giving the lease up", "token", l.Token(), "error", err)
				return
			}
			if ctx.Err() == nil {
				a.log.Warn("audit failed", "token", l.Token(), "error", err)
			}
		case r.violations > 0:
			a.metrics.audits.WithLabelValues("violation").Inc()
			a.log.Error("ledger invariant violated", "violations", r.violations, "first", r.problem)
			a.out.say("audit", "token", l.Token(), "rows", r.rows, "violations", r.violations)
		default:
			a.metrics.audits.WithLabelValues("ok").Inc()
			if first {
				a.out.say("audit", "token", l.Token(), "rows", r.rows, "violations", 0)
			}
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// auditReport is the result of one audit.
type auditReport struct {
	rows       int    // writes rows checked by this audit
	violations int    // invariant violations found
	problem    string // the first one, or ""
}

// auditState is what an auditor has checked so far: the writes rows up to
// lastID, and per shard the seq and token of its last checked write. The
// writes rows get increasing ids in commit order, and one shard's writes
// commit in seq order, so each audit only reads the rows added since.
type auditState struct {
	lastID int64
	shards map[int64]mark
}

type mark struct{ seq, token int64 }

// audit checks the writes added since st and every shard's fence row, and
// records the result, in one transaction fenced by token: BEGIN IMMEDIATE,
// check (the lease's Checkpoint), advance the auditor's fence row, read,
// insert the audit. The audit reads a consistent state: it holds the
// write lock.
func (l *ledger) audit(ctx context.Context, token uint64, check func() error, st *auditState) (auditReport, error) {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return auditReport{}, err
	}
	defer tx.Rollback()
	if err := check(); err != nil {
		return auditReport{}, err
	}
	if err := l.leases.Advance(ctx, tx, auditorLease, token); err != nil {
		return auditReport{}, err
	}
	r, err := st.scan(ctx, tx)
	if err != nil {
		return auditReport{}, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO audits (token, node, at, rows, violations, problem) VALUES (?, ?, ?, ?, ?, ?)",
		int64(token), l.node, time.Now().UnixNano(), r.rows, r.violations, r.problem); err != nil {
		return auditReport{}, err
	}
	return r, tx.Commit()
}

// queryer is what scan reads through: *sql.Tx or *sql.DB.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// scan checks the invariants over the rows added since st and advances st:
// per shard, in seq order, seq is contiguous from 1 and accepted tokens
// never decrease; every shard's fence row holds the highest accepted token
// and the last seq.
func (st *auditState) scan(ctx context.Context, q queryer) (auditReport, error) {
	if st.shards == nil {
		st.shards = map[int64]mark{}
	}
	var r auditReport
	rows, err := q.QueryContext(ctx, "SELECT id, shard, seq, token FROM writes WHERE id > ? ORDER BY id", st.lastID)
	if err != nil {
		return r, err
	}
	for rows.Next() {
		var id, shard int64
		var w mark
		if err := rows.Scan(&id, &shard, &w.seq, &w.token); err != nil {
			rows.Close()
			return r, err
		}
		prev := st.shards[shard]
		if w.seq != prev.seq+1 {
			r.add(fmt.Sprintf("shard %d: seq %d follows seq %d", shard, w.seq, prev.seq))
		}
		if w.token < prev.token {
			r.add(fmt.Sprintf("shard %d: seq %d accepted token %d after token %d", shard, w.seq, w.token, prev.token))
		}
		st.shards[shard], st.lastID = w, id
		r.rows++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return r, err
	}
	return r, st.checkFences(ctx, q, &r)
}

// checkFences compares every shard's fence row with the last checked write.
func (st *auditState) checkFences(ctx context.Context, q queryer, r *auditReport) error {
	rows, err := q.QueryContext(ctx, "SELECT shard, seq, fence FROM shards ORDER BY shard")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var shard int64
		var row mark
		if err := rows.Scan(&shard, &row.seq, &row.token); err != nil {
			return err
		}
		if last := st.shards[shard]; row != last {
			r.add(fmt.Sprintf("shard %d: fence row has seq %d fence %d, the last write seq %d token %d",
				shard, row.seq, row.token, last.seq, last.token))
		}
	}
	return rows.Err()
}

// add counts a violation, keeping the first description.
func (r *auditReport) add(problem string) {
	if r.violations == 0 {
		r.problem = problem
	}
	r.violations++
}
