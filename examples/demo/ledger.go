package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	_ "modernc.org/sqlite"

	"github.com/holdfast-go/holdfast/fence"
)

// schema is created by every node, idempotently: the file is shared.
var schema = []string{
	// shards holds each shard's fence (the highest token accepted) and the
	// number of writes accepted so far.
	`CREATE TABLE IF NOT EXISTS shards (shard INTEGER PRIMARY KEY,
		fence BIGINT NOT NULL, seq INTEGER NOT NULL DEFAULT 0)`,
	`CREATE TABLE IF NOT EXISTS writes (id INTEGER PRIMARY KEY AUTOINCREMENT,
		shard INTEGER NOT NULL, seq INTEGER NOT NULL, token BIGINT NOT NULL,
		node TEXT NOT NULL, UNIQUE (shard, seq))`,
	`CREATE TABLE IF NOT EXISTS rejected (id INTEGER PRIMARY KEY AUTOINCREMENT,
		shard INTEGER NOT NULL, token BIGINT NOT NULL, fence BIGINT NOT NULL, node TEXT NOT NULL)`,
	// fences holds the fence rows of named leases: here only "auditor".
	`CREATE TABLE IF NOT EXISTS fences (name TEXT PRIMARY KEY, fence BIGINT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS audits (id INTEGER PRIMARY KEY AUTOINCREMENT,
		token BIGINT NOT NULL, node TEXT NOT NULL, stale INTEGER NOT NULL)`,
}

// staleQuery counts accepted writes whose token is lower than a token
// accepted earlier for the same shard: exactly what fencing must prevent.
// (A write in seq order is a write in commit order: seq is bumped by the
// fenced update itself.)
const staleQuery = `SELECT COUNT(*) FROM (
	SELECT token, MAX(token) OVER (PARTITION BY shard ORDER BY seq
		ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS earlier
	FROM writes) WHERE token < earlier`

const auditorLease = "auditor"

// ledger is one node's handle on the protected resource, one SQLite file
// shared by every node. Each node opens its own *sql.DB, as separate
// processes would.
type ledger struct {
	db     *sql.DB
	node   string
	shards *fence.SQL // fence rows in shards, keyed by shard
	leases *fence.SQL // fence rows in fences, keyed by lease name
}

// openLedger opens path in WAL mode. _txlock=immediate makes every
// transaction BEGIN IMMEDIATE: BeginTx returns holding the write lock, so
// a lease check made after it cannot be outdated by waiting for the lock.
func openLedger(ctx context.Context, path, node string) (*ledger, error) {
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"+
		"&_pragma=synchronous(NORMAL)&_txlock=immediate", path)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	l := &ledger{db: db, node: node}
	if err := l.init(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

func (l *ledger) init(ctx context.Context) error {
	for _, q := range schema {
		if _, err := l.db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	var err error
	if l.shards, err = fence.NewSQL(fence.SQLConfig{Table: "shards", KeyColumn: "shard",
		FenceColumn: "fence", Placeholder: fence.Question}); err != nil {
		return err
	}
	if l.leases, err = fence.NewSQL(fence.SQLConfig{Table: "fences", KeyColumn: "name",
		FenceColumn: "fence", Placeholder: fence.Question}); err != nil {
		return err
	}
	return l.leases.Init(ctx, l.db, auditorLease)
}

func (l *ledger) close() error { return l.db.Close() }

// initShard creates shard's fence row (fence 0) if it is missing.
func (l *ledger) initShard(ctx context.Context, shard int64) error {
	return l.shards.Init(ctx, l.db, shard)
}

// appendEntry appends one entry to shard under token in one transaction:
// BEGIN IMMEDIATE, check (the lease's Checkpoint; nil skips it), the
// fenced update (fence <= token) that bumps seq, the insert. A newer token
// accepted first makes it return a *fence.FencedError.
func (l *ledger) appendEntry(ctx context.Context, shard int64, token uint64, check func() error) error {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	if err := l.shards.Update(ctx, tx, "seq = seq + 1", nil, shard, token); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO writes (shard, seq, token, node)
		SELECT shard, seq, ?, ? FROM shards WHERE shard = ?`, int64(token), l.node, shard); err != nil {
		return err
	}
	return tx.Commit()
}

// recordRejection records a write the fence refused, in a transaction of
// its own: the refused one was rolled back and left nothing.
func (l *ledger) recordRejection(ctx context.Context, shard int64, f *fence.FencedError) error {
	_, err := l.db.ExecContext(ctx, "INSERT INTO rejected (shard, token, fence, node) VALUES (?, ?, ?, ?)",
		shard, int64(f.Token), int64(f.Highest), l.node)
	return err
}

// fenceOf reads shard's fence: the highest token accepted for it.
func (l *ledger) fenceOf(ctx context.Context, shard int64) (uint64, error) {
	return l.shards.Highest(ctx, l.db, shard)
}

// audit counts the stale writes the ledger accepted and records the
// count, fenced by the auditor's token: a deposed auditor's report is
// refused like a deposed shard owner's write.
func (l *ledger) audit(ctx context.Context, token uint64, check func() error) (stale int, err error) {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if err := check(); err != nil {
		return 0, err
	}
	if err := l.leases.Advance(ctx, tx, auditorLease, token); err != nil {
		return 0, err
	}
	if err := tx.QueryRowContext(ctx, staleQuery).Scan(&stale); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO audits (token, node, stale) VALUES (?, ?, ?)",
		int64(token), l.node, stale); err != nil {
		return 0, err
	}
	return stale, tx.Commit()
}

// totals is what the ledger file says at the end.
type totals struct {
	accepted, rejected, stale int
	audits, auditors, found   int // audits recorded, distinct auditor tokens, stale writes they saw
}

func (l *ledger) totals(ctx context.Context) (totals, error) {
	var t totals
	err := errors.Join(
		l.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM writes").Scan(&t.accepted),
		l.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM rejected").Scan(&t.rejected),
		l.db.QueryRowContext(ctx, staleQuery).Scan(&t.stale),
		l.db.QueryRowContext(ctx, "SELECT COUNT(*), COUNT(DISTINCT token), COALESCE(MAX(stale), 0) FROM audits").
			Scan(&t.audits, &t.auditors, &t.found),
	)
	return t, err
}

// asFenced returns err's *fence.FencedError, if it has one.
func asFenced(err error) (*fence.FencedError, bool) {
	var fe *fence.FencedError
	return fe, errors.As(err, &fe)
}
