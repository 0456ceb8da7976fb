package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenFloor reads the highest token of a database laid out as the
// ledger's (shards and fences tables), with tokens of the size a cluster
// with a token base issues, and checks the usage and failure exits.
func TestTokenFloor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE TABLE shards (shard INTEGER PRIMARY KEY, fence BIGINT NOT NULL, seq INTEGER NOT NULL DEFAULT 0)",
		"CREATE TABLE fences (name TEXT PRIMARY KEY, fence BIGINT NOT NULL)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if out := mustCtl(t, "token-floor", "-sqlite", path); out != "0\n" {
		t.Fatalf("empty tables: %q", out)
	}
	for _, q := range []string{
		"INSERT INTO shards (shard, fence) VALUES (0, 1771000000000017), (1, 1771000000000042), (2, 0)",
		"INSERT INTO fences (name, fence) VALUES ('auditor', 1771000000000031)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if out := mustCtl(t, "token-floor", "-sqlite", path); out != "1771000000000042\n" {
		t.Fatalf("floor %q", out)
	}
	code, out, errOut := ctl("token-floor", "-sqlite", path, "-columns", "fences.fence", "-v")
	if code != 0 || out != "1771000000000031\n" || !strings.Contains(errOut, "fences.fence: highest token 1771000000000031") {
		t.Fatalf("fences only: exit %d, %q, %q", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"token-floor"}, 2, "-sqlite is required"},
		{[]string{"token-floor", "-sqlite", path, "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"token-floor", "-sqlite", filepath.Join(t.TempDir(), "none.db")}, 1, "no such file"},
		{[]string{"token-floor", "-sqlite", path, "-columns", "nodot"}, 1, "not TABLE.COLUMN"},
		{[]string{"token-floor", "-sqlite", path, "-columns", "writes.token"}, 1, "no such table"},
		{[]string{"token-floor", "-sqlite", path, "-columns", "shards.x;y"}, 1, "not a plain SQL identifier"},
	} {
		code, out, errOut := ctl(tc.args...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q (want %q)", tc.args, code, tc.code, out, errOut, tc.want)
		}
	}
	if code, out, _ := ctl("token-floor", "-h"); code != 0 || !strings.Contains(out, "usage:") {
		t.Errorf("-h: exit %d, %q", code, out)
	}
}
