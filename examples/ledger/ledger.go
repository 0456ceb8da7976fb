package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	_ "modernc.org/sqlite"

	"github.com/holdfast-go/holdfast/fence"
)

// schema is created by every node, idempotently.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS shards (
		shard INTEGER PRIMARY KEY,
		fence BIGINT NOT NULL,
		seq INTEGER NOT NULL DEFAULT 0)`,
	`CREATE TABLE IF NOT EXISTS writes (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		shard INTEGER NOT NULL,
		seq INTEGER NOT NULL,
		token BIGINT NOT NULL,
		node TEXT NOT NULL,
		at INTEGER NOT NULL,
		UNIQUE (shard, seq))`,
	`CREATE TABLE IF NOT EXISTS rejected (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		shard INTEGER NOT NULL,
		token BIGINT NOT NULL,
		fence BIGINT NOT NULL,
		node TEXT NOT NULL,
		at INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS fences (
		name TEXT PRIMARY KEY,
		fence BIGINT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS audits (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		token BIGINT NOT NULL,
		node TEXT NOT NULL,
		at INTEGER NOT NULL,
		rows INTEGER NOT NULL,
		violations INTEGER NOT NULL,
		problem TEXT NOT NULL)`,
}

// auditorLease names the leader lease of the auditor, and its fence row.
const auditorLease = "auditor"

// ledger is the protected resource: one SQLite file shared by every node.
type ledger struct {
	db     *sql.DB
	node   string
	shards *fence.SQL // fence rows of the shards table, keyed by shard
	leases *fence.SQL // fence rows of named leases, keyed by name
}

// openDB opens the SQLite file at path in WAL mode. Transactions begin
// IMMEDIATE: BeginTx returns once this connection holds the database's
// write lock, waiting up to busyMillis for it. synchronous=NORMAL keeps
// every commit through a process crash (not through a power loss), which
// is what a SIGKILL tests.
func openDB(path string, busyMillis int) (*sql.DB, error) {
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)"+
		"&_pragma=synchronous(NORMAL)&_txlock=immediate", path, busyMillis)
	return sql.Open("sqlite", dsn)
}

// openLedger opens the database, creates the schema and the auditor's fence
// row. reg receives holdfast_fence_rejections_total{kind="sql"}.
func openLedger(ctx context.Context, path, node string, reg prometheus.Registerer) (*ledger, error) {
	const busyMillis = 10000
	db, err := openDB(path, busyMillis)
	if err != nil {
		return nil, fmt.Errorf("-db: %w", err)
	}
	l := &ledger{db: db, node: node}
	if err := l.newFences(reg); err != nil {
		db.Close()
		return nil, err
	}
	if err := retryBusy(ctx, busyMillis*time.Millisecond, l.init); err != nil {
		db.Close()
		return nil, fmt.Errorf("-db %s: %w", path, err)
	}
	return l, nil
}

// retryBusy runs f until it returns anything but SQLITE_BUSY, or until
// budget has passed. Nodes that open a new database file at the same time
// all switch it to WAL mode as their connection opens; that switch needs
// the file's exclusive lock, and SQLite answers a contended switch with
// SQLITE_BUSY at once instead of calling the busy handler (waiting could
// deadlock two connections that both hold a shared lock). Once one of them
// has switched, the others' switch is a no-op.
func retryBusy(ctx context.Context, budget time.Duration, f func(context.Context) error) error {
	deadline := time.Now().Add(budget)
	for {
		err := f(ctx)
		if !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(time.Duration(5+rand.IntN(20)) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var se interface{ Code() int }
	return errors.As(err, &se) && se.Code()&0xff == sqliteBusy
}

// sqliteBusy is SQLite's primary result code SQLITE_BUSY.
const sqliteBusy = 5

// newFences makes the fences of the shards and fences tables.
func (l *ledger) newFences(reg prometheus.Registerer) error {
	var err error
	if l.shards, err = fence.NewSQL(fence.SQLConfig{Table: "shards", KeyColumn: "shard",
		FenceColumn: "fence", Placeholder: fence.Question, Registerer: reg}); err != nil {
		return err
	}
	l.leases, err = fence.NewSQL(fence.SQLConfig{Table: "fences", KeyColumn: "name",
		FenceColumn: "fence", Placeholder: fence.Question, Registerer: reg})
	return err
}

// init checks WAL mode and creates the schema and the auditor's fence row;
// every step is idempotent.
func (l *ledger) init(ctx context.Context) error {
	var mode string
	if err := l.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal_mode is %q, not wal", mode)
	}
	for _, q := range schema {
		if _, err := l.db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return l.leases.Init(ctx, l.db, auditorLease)
}

func (l *ledger) close() error { return l.db.Close() }

// initShard creates shard's fence row (fence 0, seq 0) if it is missing.
func (l *ledger) initShard(ctx context.Context, shard int64) error {
	return l.shards.Init(ctx, l.db, shard)
}

// appendEntry appends one entry to shard's ledger under token, in one
// transaction: BEGIN IMMEDIATE (the write lock is held from here on, so
// waiting for it cannot open a window between check and write), check (the
// lease's Checkpoint, or nil to skip it), the fenced update that also bumps
// the shard's seq, and the insert of the entry with that seq. It returns
// the entry's seq; check's error as is; a *fence.FencedError when a higher
// token was accepted first.
func (l *ledger) appendEntry(ctx context.Context, shard int64, token uint64, check func() error) (int64, error) {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if check != nil {
		if err := check(); err != nil {
			return 0, err
		}
	}
	if err := l.shards.Update(ctx, tx, "seq = seq + 1", nil, shard, token); err != nil {
		return 0, err
	}
	var seq int64
	if err := tx.QueryRowContext(ctx, "SELECT seq FROM shards WHERE shard = ?", shard).Scan(&seq); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO writes (shard, seq, token, node, at) VALUES (?, ?, ?, ?, ?)",
		shard, seq, int64(token), l.node, time.Now().UnixNano()); err != nil {
		return 0, err
	}
	return seq, tx.Commit()
}

// recordRejection records a write the fence refused, in a transaction of
// its own (the refused one was rolled back).
func (l *ledger) recordRejection(ctx context.Context, shard int64, fenced *fence.FencedError) error {
	_, err := l.db.ExecContext(ctx, "INSERT INTO rejected (shard, token, fence, node, at) VALUES (?, ?, ?, ?, ?)",
		shard, int64(fenced.Token), int64(fenced.Highest), l.node, time.Now().UnixNano())
	return err
}

// asFenced returns err's *fence.FencedError, if it has one.
func asFenced(err error) (*fence.FencedError, bool) {
	var fe *fence.FencedError
	return fe, errors.As(err, &fe)
}
