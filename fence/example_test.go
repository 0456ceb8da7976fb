package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/holdfast-go/holdfast/fence"
)

// A zombie writer on SQLite: the holder with token 5 pauses, its lease ends,
// a new holder gets token 6 and writes; when the zombie wakes up its write
// is rejected.
func Example() {
	dir, _ := os.MkdirTemp("", "fence-example")
	defer os.RemoveAll(dir)
	db, _ := openSQLite(filepath.Join(dir, "jobs.db"))
	defer db.Close()
	ctx := context.Background()
	_, _ = db.Exec(`CREATE TABLE jobs (id TEXT PRIMARY KEY, state TEXT, fence BIGINT NOT NULL DEFAULT 0)`)

	jobs, err := fence.NewSQL(fence.SQLConfig{
		Table: "jobs", KeyColumn: "id", FenceColumn: "fence", Placeholder: fence.Question,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = jobs.Init(ctx, db, "reindex")

	write := func(who string, token uint64) {
		err := jobs.Update(ctx, db, "state = ?", []any{"written by " + who}, "reindex", token)
		switch {
		case errors.Is(err, fence.ErrFenced):
			fmt.Printf("%s (token %d): rejected: %v\n", who, token, err)
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Printf("%s (token %d): ok\n", who, token)
		}
	}
	write("holder A", 5)
	// A pauses (GC, SIGSTOP); its lease expires; B is granted token 6.
	write("holder B", 6)
	write("holder A", 5) // the zombie wakes up

	var state string
	_ = db.QueryRow(`SELECT state FROM jobs WHERE id = 'reindex'`).Scan(&state)
	fmt.Println("state:", state)
	// Output:
	// holder A (token 5): ok
	// holder B (token 6): ok
	// holder A (token 5): rejected: fence: jobs/reindex: token 5 rejected: token 6 was already accepted
	// state: written by holder B
}

// The transaction pattern: advance the fence first, then write; a stale
// token's transaction is rolled back and leaves nothing.
func ExampleSQL_Guard() {
	dir, _ := os.MkdirTemp("", "fence-example")
	defer os.RemoveAll(dir)
	db, _ := openSQLite(filepath.Join(dir, "ledger.db"))
	defer db.Close()
	ctx := context.Background()
	_, _ = db.Exec(`CREATE TABLE fences (name TEXT PRIMARY KEY, fence BIGINT NOT NULL DEFAULT 0)`)
	_, _ = db.Exec(`CREATE TABLE entries (shard TEXT, amount INTEGER)`)

	f, _ := fence.NewSQL(fence.SQLConfig{
		Table: "fences", KeyColumn: "name", FenceColumn: "fence", Placeholder: fence.Question,
	})
	_ = f.Init(ctx, db, "shard-7")

	post := func(token uint64, amount int) error {
		return f.Guard(ctx, db, "shard-7", token, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO entries VALUES ('shard-7', ?)`, amount)
			return err
		})
	}
	fmt.Println(post(12, 100))
	fmt.Println(post(12, 50)) // same holder, same token: fine
	fmt.Println(errors.Is(post(11, 999), fence.ErrFenced))

	var n, sum int
	_ = db.QueryRow(`SELECT COUNT(*), SUM(amount) FROM entries`).Scan(&n, &sum)
	fmt.Println(n, sum)
	// Output:
	// <nil>
	// <nil>
	// true
	// 2 150
}

// Memory fences writers inside one process: Do runs the write only for an
// accepted token, and no other token's write can interleave with it.
func ExampleMemory_Do() {
	m := fence.NewMemory(fence.MemoryConfig{})
	var cache []string
	for _, w := range []struct {
		token uint64
		value string
	}{{3, "a"}, {4, "b"}, {3, "stale"}} {
		err := m.Do("cache", w.token, func() error {
			cache = append(cache, w.value)
			return nil
		})
		fmt.Println(w.token, err)
	}
	fmt.Println(cache, m.Highest("cache"))
	// Output:
	// 3 <nil>
	// 4 <nil>
	// 3 fence: cache: token 3 rejected: token 4 was already accepted
	// [a b] 4
}
