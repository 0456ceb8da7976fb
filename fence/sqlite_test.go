package fence_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/holdfast-go/holdfast/fence"
)

// openSQLite opens a handle to the SQLite database file at path in WAL mode.
// Transactions begin IMMEDIATE and wait for the write lock, so writers on
// separate handles queue instead of failing with SQLITE_BUSY.
func openSQLite(path string) (*sql.DB, error) {
	dsn := "file:" + path + "?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	return sql.Open("sqlite", dsn)
}

// sqliteEnv gives each test its own database file in t.TempDir().
func sqliteEnv(t *testing.T) *env {
	path := filepath.Join(t.TempDir(), "fence.db")
	open := func() *sql.DB {
		db, err := openSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	e := &env{
		t:      t,
		ph:     fence.Question,
		serial: "INTEGER PRIMARY KEY AUTOINCREMENT",
		open:   open,
		qual:   func(base string) string { return base },
	}
	e.db = open()
	var mode string
	if err := e.db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	return e
}

func TestSQLite(t *testing.T) { runSuite(t, sqliteEnv) }
