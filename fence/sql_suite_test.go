package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/holdfast-go/holdfast/fence"
)

// env is one fresh database for one test: SQLite file or PostgreSQL schema.
type env struct {
	t      *testing.T
	ph     fence.Placeholder
	serial string                   // column type of an auto-increasing primary key
	open   func() *sql.DB           // a new handle to the same database
	qual   func(base string) string // a table name in this test's namespace
	db     *sql.DB
}

// exec runs a test statement written with "?" placeholders.
func (e *env) exec(db *sql.DB, query string, args ...any) {
	e.t.Helper()
	if _, err := db.ExecContext(context.Background(), e.rebind(query), args...); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
}

// rebind rewrites "?" into "$1", "$2"... for Dollar databases.
func (e *env) rebind(query string) string {
	if e.ph != fence.Dollar {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fences creates a table of fences only and its helper.
func (e *env) fences(reg prometheus.Registerer) (string, *fence.SQL) {
	e.t.Helper()
	table := e.qual("fences")
	e.exec(e.db, "CREATE TABLE "+table+" (name TEXT PRIMARY KEY, fence BIGINT NOT NULL DEFAULT 0)")
	s, err := fence.NewSQL(fence.SQLConfig{Table: table, KeyColumn: "name", FenceColumn: "fence",
		Placeholder: e.ph, Registerer: reg})
	if err != nil {
		e.t.Fatal(err)
	}
	return table, s
}

// runSuite runs the SQL tests, each on a fresh database from newEnv.
func runSuite(t *testing.T, newEnv func(t *testing.T) *env) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"InitAndNoRow", testInitAndNoRow},
		{"AdvanceAcceptReject", testAdvanceAcceptReject},
		{"UpdateWithSetArgs", testUpdateWithSetArgs},
		{"GuardRollsBack", testGuardRollsBack},
		{"ConcurrentHandles", testConcurrentHandles},
		{"LargeTokensAndMax", testLargeTokensAndMax},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newEnv(t)) })
	}
}

func testInitAndNoRow(t *testing.T, e *env) {
	ctx := context.Background()
	_, s := e.fences(nil)
	if err := s.Advance(ctx, e.db, "a", 1); !errors.Is(err, fence.ErrNoRow) || errors.Is(err, fence.ErrFenced) {
		t.Fatalf("Advance before Init = %v, want ErrNoRow only", err)
	}
	if _, err := s.Highest(ctx, e.db, "a"); !errors.Is(err, fence.ErrNoRow) {
		t.Fatalf("Highest before Init = %v, want ErrNoRow", err)
	}
	for range 2 { // idempotent
		if err := s.Init(ctx, e.db, "a"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Advance(ctx, e.db, "a", 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Init(ctx, e.db, "a"); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Highest(ctx, e.db, "a"); err != nil || h != 3 {
		t.Fatalf("Highest after re-Init = %d, %v; want 3 (Init must not reset)", h, err)
	}
}

func testAdvanceAcceptReject(t *testing.T, e *env) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	table, s := e.fences(reg)
	if err := s.Init(ctx, e.db, "lease"); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []uint64{0, 5, 5, 6} {
		if err := s.Advance(ctx, e.db, "lease", tok); err != nil {
			t.Fatalf("Advance(%d) = %v", tok, err)
		}
	}
	err := s.Advance(ctx, e.db, "lease", 5)
	var fe *fence.FencedError
	if !errors.As(err, &fe) || !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("Advance(5) after 6 = %v, want *FencedError", err)
	}
	if want := (fence.FencedError{Resource: table + "/lease", Token: 5, Highest: 6}); *fe != want {
		t.Errorf("FencedError = %+v, want %+v", *fe, want)
	}
	if err := s.Advance(ctx, e.db, "lease", math.MaxInt64+1); !errors.Is(err, fence.ErrTokenRange) {
		t.Errorf("Advance(MaxInt64+1) = %v, want ErrTokenRange", err)
	}
	if err := s.Advance(ctx, e.db, "lease", math.MaxInt64); err != nil {
		t.Errorf("Advance(MaxInt64) = %v", err)
	}
	if h, err := s.Highest(ctx, e.db, "lease"); err != nil || h != math.MaxInt64 {
		t.Errorf("Highest = %d, %v; want MaxInt64", h, err)
	}
	if got := testutil.ToFloat64(s.RejectionsForTest()); got != 1 {
		t.Errorf("rejections = %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg, "holdfast_fence_rejections_total"); err != nil || n != 1 {
		t.Errorf("registered series = %d, %v; want 1", n, err)
	}
}

func testUpdateWithSetArgs(t *testing.T, e *env) {
	ctx := context.Background()
	jobs := e.qual("jobs")
	e.exec(e.db, "CREATE TABLE "+jobs+" (id TEXT PRIMARY KEY, state TEXT NOT NULL, result TEXT, fence BIGINT NOT NULL)")
	e.exec(e.db, "INSERT INTO "+jobs+" (id, state, fence) VALUES (?, ?, 0)", "j1", "new")
	s, err := fence.NewSQL(fence.SQLConfig{Table: jobs, KeyColumn: "id", FenceColumn: "fence", Placeholder: e.ph})
	if err != nil {
		t.Fatal(err)
	}
	set := "state = ?, result = ?"
	if e.ph == fence.Dollar {
		set = "state = $1, result = $2"
	}
	if err := s.Update(ctx, e.db, set, []any{"running", "r5"}, "j1", 5); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, e.db, set, []any{"done", "r6"}, "j1", 6); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, e.db, set, []any{"done", "zombie"}, "j1", 5); !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("stale Update = %v, want ErrFenced", err)
	}
	if err := s.Update(ctx, e.db, set, []any{"x", "y"}, "nope", 9); !errors.Is(err, fence.ErrNoRow) {
		t.Fatalf("Update of a missing row = %v, want ErrNoRow", err)
	}
	if err := s.Update(ctx, e.db, " ", nil, "j1", 9); err == nil {
		t.Fatal("Update with an empty SET: no error")
	}
	var state, result string
	var f int64
	row := e.db.QueryRowContext(ctx, e.rebind("SELECT state, result, fence FROM "+jobs+" WHERE id = ?"), "j1")
	if err := row.Scan(&state, &result, &f); err != nil {
		t.Fatal(err)
	}
	if state != "done" || result != "r6" || f != 6 {
		t.Fatalf("row = %s %s %d, want done r6 6", state, result, f)
	}
}

// testGuardRollsBack checks the transaction pattern: a stale token's
// transaction writes nothing, and a failed write does not advance the fence.
func testGuardRollsBack(t *testing.T, e *env) {
	ctx := context.Background()
	_, s := e.fences(nil)
	writes := e.qual("writes")
	e.exec(e.db, "CREATE TABLE "+writes+" (id "+e.serial+", token BIGINT NOT NULL)")
	if err := s.Init(ctx, e.db, "k"); err != nil {
		t.Fatal(err)
	}
	insert := func(tok uint64) func(tx *sql.Tx) error {
		return func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, e.rebind("INSERT INTO "+writes+" (token) VALUES (?)"), int64(tok))
			return err
		}
	}
	if err := s.Guard(ctx, e.db, "k", 6, insert(6)); err != nil {
		t.Fatal(err)
	}
	called := false
	err := s.Guard(ctx, e.db, "k", 5, func(tx *sql.Tx) error { called = true; return insert(5)(tx) })
	if !errors.Is(err, fence.ErrFenced) || called {
		t.Fatalf("stale Guard = %v (fn called: %v), want ErrFenced and fn not called", err, called)
	}
	boom := errors.New("boom")
	err = s.Guard(ctx, e.db, "k", 7, func(tx *sql.Tx) error {
		if err := insert(7)(tx); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("Guard with failing fn = %v, want boom", err)
	}
	// By hand, in the caller's own transaction.
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Advance(ctx, tx, "k", 4); !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("Advance(4) in tx = %v, want ErrFenced", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	var n, maxTok int64
	if err := e.db.QueryRowContext(ctx, "SELECT COUNT(*), MAX(token) FROM "+writes).Scan(&n, &maxTok); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Highest(ctx, e.db, "k"); n != 1 || maxTok != 6 || h != 6 {
		t.Fatalf("after rollbacks: %d writes, max token %d, fence %d; want 1, 6, 6", n, maxTok, h)
	}
}

// testConcurrentHandles runs writers on separate *sql.DB handles with
// random tokens. Each accepted transaction appends its token to a log in
// the same transaction; the log, in insertion order, must never go down.
func testConcurrentHandles(t *testing.T, e *env) {
	ctx := context.Background()
	_, s := e.fences(nil)
	log := e.qual("log")
	e.exec(e.db, "CREATE TABLE "+log+" (seq "+e.serial+", token BIGINT NOT NULL)")
	if err := s.Init(ctx, e.db, "shard-1"); err != nil {
		t.Fatal(err)
	}
	const writers, rounds = 4, 40
	var mu sync.Mutex
	accepted, fenced := 0, 0
	var wg sync.WaitGroup
	for w := range writers {
		db := e.open()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range rounds {
				tok := uint64(i + rng.IntN(10))
				err := s.Guard(ctx, db, "shard-1", tok, func(tx *sql.Tx) error {
					_, err := tx.ExecContext(ctx, e.rebind("INSERT INTO "+log+" (token) VALUES (?)"), int64(tok))
					return err
				})
				mu.Lock()
				switch {
				case err == nil:
					accepted++
				case errors.Is(err, fence.ErrFenced):
					fenced++
				default:
					t.Errorf("writer %d token %d: %v", w, tok, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	checkLog(t, e, log, accepted)
	t.Logf("%d accepted, %d fenced", accepted, fenced)
}

// checkLog checks that the log holds n non-decreasing tokens.
func checkLog(t *testing.T, e *env, log string, n int) {
	t.Helper()
	rows, err := e.db.QueryContext(context.Background(), "SELECT token FROM "+log+" ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var seq []int64
	for rows.Next() {
		var tok int64
		if err := rows.Scan(&tok); err != nil {
			t.Fatal(err)
		}
		if len(seq) > 0 && tok < seq[len(seq)-1] {
			t.Errorf("log entry %d: token %d committed after %d", len(seq), tok, seq[len(seq)-1])
		}
		seq = append(seq, tok)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seq) != n {
		t.Errorf("log has %d entries, %d transactions were accepted", len(seq), n)
	}
	if len(seq) == 0 {
		t.Error("no write was accepted")
	}
}

// testLargeTokensAndMax writes tokens of the size a cluster created with a
// token base issues (the clock in microseconds, and the highest base
// 2^62), checks that they order and fence as small ones do, that the
// largest BIGINT is accepted and one above is refused, and that Max and
// MaxToken read the highest.
func testLargeTokensAndMax(t *testing.T, e *env) {
	ctx := context.Background()
	table, s := e.fences(nil)
	if h, err := s.Max(ctx, e.db); err != nil || h != 0 {
		t.Fatalf("Max of an empty table: %d, %v", h, err)
	}
	const clockBase = 1_771_000_000_000_000
	for _, key := range []string{"a", "b"} {
		if err := s.Init(ctx, e.db, key); err != nil {
			t.Fatal(err)
		}
	}
	for _, tok := range []uint64{3, clockBase + 1, clockBase + 2, 1<<62 + 1} {
		if err := s.Advance(ctx, e.db, "a", tok); err != nil {
			t.Fatalf("Advance(%d): %v", tok, err)
		}
	}
	var fe *fence.FencedError
	if err := s.Advance(ctx, e.db, "a", clockBase+2); !errors.As(err, &fe) || fe.Highest != 1<<62+1 {
		t.Fatalf("an older large token: %v", err)
	}
	if err := s.Advance(ctx, e.db, "b", math.MaxInt64); err != nil {
		t.Fatalf("Advance(MaxInt64): %v", err)
	}
	if err := s.Advance(ctx, e.db, "b", math.MaxInt64+1); !errors.Is(err, fence.ErrTokenRange) {
		t.Fatalf("Advance(MaxInt64+1): %v", err)
	}
	if h, err := s.Max(ctx, e.db); err != nil || h != math.MaxInt64 {
		t.Fatalf("Max: %d, %v", h, err)
	}
	if h, err := fence.MaxToken(ctx, e.db, table, "fence"); err != nil || h != math.MaxInt64 {
		t.Fatalf("MaxToken: %d, %v", h, err)
	}
	if _, err := fence.MaxToken(ctx, e.db, table, "fence; DROP TABLE x"); err == nil {
		t.Fatal("MaxToken took a column that is not an identifier")
	}
}
