package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Placeholder is the bind-parameter style of a database driver.
type Placeholder int

const (
	// Question numbers nothing: "?" (SQLite, MySQL).
	Question Placeholder = iota + 1
	// Dollar numbers parameters: "$1", "$2" (PostgreSQL).
	Dollar
)

// String returns "?" or "$N".
func (p Placeholder) String() string {
	switch p {
	case Question:
		return "?"
	case Dollar:
		return "$N"
	}
	return "Placeholder(" + strconv.Itoa(int(p)) + ")"
}

// bind returns the n-th (1-based) parameter marker.
func (p Placeholder) bind(n int) string {
	if p == Dollar {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// Execer runs a statement: *sql.DB, *sql.Tx and *sql.Conn satisfy it.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Querier reads one row: *sql.DB, *sql.Tx and *sql.Conn satisfy it. When the
// Execer given to Advance or Update is also a Querier, a rejected write is
// followed by a read of the fence column, to tell ErrNoRow from ErrFenced
// and to fill FencedError.Highest.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// TxBeginner starts a transaction: *sql.DB and *sql.Conn satisfy it.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// SQLConfig describes where the fence lives: a row per key in Table, whose
// FenceColumn (a BIGINT NOT NULL, 0 for a new row) holds the highest token
// accepted for the row's KeyColumn (unique). The table may be the caller's
// own data table (a fence column on each job row) or a table of fences only.
type SQLConfig struct {
	// Table is a plain identifier, or schema.table.
	Table string
	// KeyColumn is a plain identifier; the column must be unique.
	KeyColumn string
	// FenceColumn is a plain identifier of a BIGINT column.
	FenceColumn string
	// Placeholder is the driver's bind style: Question or Dollar.
	Placeholder Placeholder
	// Registerer, if not nil, gets holdfast_fence_rejections_total
	// {kind="sql"}. Several SQL (and Memory) instances on one Registerer
	// share the counter.
	Registerer prometheus.Registerer
}

// SQL performs fenced writes with database/sql. Its statements are built
// once, from validated identifiers, by NewSQL; its fields cannot be changed
// afterwards. It is safe for concurrent use.
type SQL struct {
	table, resource string
	fence, key      string
	ph              Placeholder
	advanceQ        string
	initQ           string
	highestQ        string
	maxQ            string
	rejections      prometheus.Counter
}

// NewSQL validates cfg and returns the helper. Identifiers must be plain,
// unquoted SQL identifiers ([A-Za-z_][A-Za-z0-9_]*, at most 63 bytes), so no
// SQL can be injected through them; remember that PostgreSQL folds unquoted
// names to lower case.
func NewSQL(cfg SQLConfig) (*SQL, error) {
	if err := validTable(cfg.Table); err != nil {
		return nil, fmt.Errorf("fence: SQLConfig.Table: %w", err)
	}
	if err := validIdent(cfg.KeyColumn); err != nil {
		return nil, fmt.Errorf("fence: SQLConfig.KeyColumn: %w", err)
	}
	if err := validIdent(cfg.FenceColumn); err != nil {
		return nil, fmt.Errorf("fence: SQLConfig.FenceColumn: %w", err)
	}
	if cfg.KeyColumn == cfg.FenceColumn {
		return nil, errors.New("fence: SQLConfig.KeyColumn and FenceColumn must differ")
	}
	if cfg.Placeholder != Question && cfg.Placeholder != Dollar {
		return nil, fmt.Errorf("fence: SQLConfig.Placeholder: %v is neither Question nor Dollar", cfg.Placeholder)
	}
	c, err := newRejections(cfg.Registerer, kindSQL)
	if err != nil {
		return nil, fmt.Errorf("fence: registering metrics: %w", err)
	}
	p := cfg.Placeholder.bind
	s := &SQL{
		table: cfg.Table, key: cfg.KeyColumn, fence: cfg.FenceColumn,
		ph: cfg.Placeholder, rejections: c,
	}
	s.advanceQ = "UPDATE " + s.table + " SET " + s.fence + " = " + p(1) +
		" WHERE " + s.key + " = " + p(2) + " AND " + s.fence + " <= " + p(3)
	s.initQ = "INSERT INTO " + s.table + " (" + s.key + ", " + s.fence + ") VALUES (" +
		p(1) + ", 0) ON CONFLICT (" + s.key + ") DO NOTHING"
	s.highestQ = "SELECT " + s.fence + " FROM " + s.table + " WHERE " + s.key + " = " + p(1)
	s.maxQ = maxQuery(s.table, s.fence)
	return s, nil
}

// validTable accepts "table" or "schema.table".
func validTable(name string) error {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return fmt.Errorf("%q: at most one dot (schema.table)", name)
	}
	for _, p := range parts {
		if err := validIdent(p); err != nil {
			return err
		}
	}
	return nil
}

// validIdent accepts a plain SQL identifier.
func validIdent(name string) error {
	if name == "" {
		return errors.New("empty identifier")
	}
	if len(name) > 63 {
		return fmt.Errorf("%q: longer than 63 bytes", name)
	}
	for i, r := range name {
		letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return fmt.Errorf("%q: not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*)", name)
		}
	}
	return nil
}

// dbToken converts token for a BIGINT column.
func dbToken(token uint64) (int64, error) {
	if token > math.MaxInt64 {
		return 0, fmt.Errorf("%w: %d", ErrTokenRange, token)
	}
	return int64(token), nil
}

// Init creates the fence row for key with fence 0, and does nothing if the
// row exists. It uses INSERT ... ON CONFLICT (key) DO NOTHING (SQLite 3.24+,
// PostgreSQL 9.5+; not MySQL, where INSERT IGNORE does the same). Tables
// whose rows carry other NOT NULL columns without defaults must create their
// rows themselves, with the fence column at 0.
func (s *SQL) Init(ctx context.Context, q Execer, key any) error {
	if _, err := q.ExecContext(ctx, s.initQ, key); err != nil {
		return fmt.Errorf("fence: init %s/%v: %w", s.table, key, err)
	}
	return nil
}

// Advance raises the fence of key to token, in one statement:
//
//	UPDATE <table> SET <fence> = token WHERE <key> = key AND <fence> <= token
//
// Run it on the caller's *sql.Tx, before the transaction's other writes (see
// Guard). The same token may be used any number of times. If the row holds a
// higher token, Advance returns a *FencedError (ErrFenced); if there is no
// row for key, an error wrapping ErrNoRow; a token above math.MaxInt64 is
// refused with ErrTokenRange before any statement runs.
func (s *SQL) Advance(ctx context.Context, q Execer, key any, token uint64) error {
	t, err := dbToken(token)
	if err != nil {
		return err
	}
	res, err := q.ExecContext(ctx, s.advanceQ, t, key, t)
	return s.result(ctx, q, res, err, key, token)
}

// Update runs the caller's own UPDATE on the fenced row, made conditional on
// the token and raising the fence in the same statement:
//
//	UPDATE <table> SET <set>, <fence> = token WHERE <key> = key AND <fence> <= token
//
// set is the caller's SET list ("state = ?, result = ?" or, with Dollar,
// "state = $1, result = $2", numbered from 1), and setArgs its values; the
// helper numbers its own parameters after them. set is SQL text: build it
// from constants, never from input, and pass values in setArgs. Results are
// as for Advance.
func (s *SQL) Update(ctx context.Context, q Execer, set string, setArgs []any, key any, token uint64) error {
	if strings.TrimSpace(set) == "" {
		return errors.New("fence: Update: empty SET clause")
	}
	t, err := dbToken(token)
	if err != nil {
		return err
	}
	n := len(setArgs)
	p := s.ph.bind
	query := "UPDATE " + s.table + " SET " + set + ", " + s.fence + " = " + p(n+1) +
		" WHERE " + s.key + " = " + p(n+2) + " AND " + s.fence + " <= " + p(n+3)
	args := make([]any, 0, n+3)
	args = append(append(args, setArgs...), t, key, t)
	res, err := q.ExecContext(ctx, query, args...)
	return s.result(ctx, q, res, err, key, token)
}

// result maps the outcome of a conditional update to nil, ErrFenced or
// ErrNoRow.
func (s *SQL) result(ctx context.Context, q Execer, res sql.Result, err error, key any, token uint64) error {
	resource := s.table + "/" + fmt.Sprint(key)
	if err != nil {
		return fmt.Errorf("fence: %s: %w", resource, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fence: %s: rows affected: %w", resource, err)
	}
	if n > 0 {
		return nil
	}
	fenced := &FencedError{Resource: resource, Token: token}
	qr, ok := q.(Querier)
	if !ok {
		s.rejections.Inc()
		return fenced
	}
	h, err := s.Highest(ctx, qr, key)
	switch {
	case errors.Is(err, ErrNoRow):
		return err
	case err != nil:
		// Unknown why; refusing is the safe reading.
		s.rejections.Inc()
		return fmt.Errorf("%w (reading the fence then failed: %v)", fenced, err)
	case h <= token:
		return fmt.Errorf("fence: %s: no row updated although fence %d <= token %d; "+
			"does the driver count changed rather than matched rows? (MySQL: clientFoundRows=true)",
			resource, h, token)
	}
	s.rejections.Inc()
	fenced.Highest = h
	return fenced
}

// Highest reads the fence of key: the highest token accepted for it. It
// returns an error wrapping ErrNoRow if there is no row for key.
func (s *SQL) Highest(ctx context.Context, q Querier, key any) (uint64, error) {
	var h int64
	err := q.QueryRowContext(ctx, s.highestQ, key).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: %s/%v", ErrNoRow, s.table, key)
	}
	if err != nil {
		return 0, fmt.Errorf("fence: reading %s/%v: %w", s.table, key, err)
	}
	if h < 0 {
		return 0, fmt.Errorf("fence: %s/%v holds a negative fence %d", s.table, key, h)
	}
	return uint64(h), nil
}

// Max returns the highest fence of any row of the table: the highest token
// the table ever accepted, 0 for an empty table. Give it (the largest over
// every fenced table) as Cluster.TokenFloor to a cluster created anew after
// every data dir was lost, so that its tokens start above it.
func (s *SQL) Max(ctx context.Context, q Querier) (uint64, error) {
	return queryMax(ctx, q, s.maxQ, s.table, s.fence)
}

// MaxToken returns the highest value of column in table (plain identifiers,
// as NewSQL takes them; table may be schema.table), 0 for an empty table:
// SQL.Max for a fence column without a helper.
func MaxToken(ctx context.Context, q Querier, table, column string) (uint64, error) {
	if err := validTable(table); err != nil {
		return 0, fmt.Errorf("fence: MaxToken table: %w", err)
	}
	if err := validIdent(column); err != nil {
		return 0, fmt.Errorf("fence: MaxToken column: %w", err)
	}
	return queryMax(ctx, q, maxQuery(table, column), table, column)
}

// maxQuery is the statement of Max.
func maxQuery(table, column string) string {
	return "SELECT COALESCE(MAX(" + column + "), 0) FROM " + table
}

// queryMax runs a maxQuery.
func queryMax(ctx context.Context, q Querier, query, table, column string) (uint64, error) {
	var h int64
	if err := q.QueryRowContext(ctx, query).Scan(&h); err != nil {
		return 0, fmt.Errorf("fence: reading the highest %s.%s: %w", table, column, err)
	}
	if h < 0 {
		return 0, fmt.Errorf("fence: %s.%s holds a negative fence %d", table, column, h)
	}
	return uint64(h), nil
}

// Guard runs fn in a new transaction on db, after Advance(key, token) in that
// transaction, and commits if both succeed. If Advance fails (ErrFenced,
// ErrNoRow) fn is not called; if either fails, or fn panics, the transaction
// is rolled back, so a stale holder leaves nothing behind. fn must do its
// writes through tx and must not commit or roll it back.
//
// To run the pattern in a transaction of your own (other options, a
// *sql.Conn), call Advance on it first and roll back on any error.
func (s *SQL) Guard(ctx context.Context, db TxBeginner, key any, token uint64, fn func(tx *sql.Tx) error) error {
	if _, err := dbToken(token); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fence: begin: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback()
		}
	}()
	if err := s.Advance(ctx, tx, key, token); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	done = true
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fence: commit: %w", err)
	}
	return nil
}
