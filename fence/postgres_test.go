package fence_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/holdfast-go/holdfast/fence"
)

// pgDSNEnv names the environment variable with the PostgreSQL DSN.
const pgDSNEnv = "HOLDFAST_PG_DSN"

// reachablePostgres returns the DSN in HOLDFAST_PG_DSN, or skips the test
// when the variable is unset or the server does not answer.
func reachablePostgres(t *testing.T) string {
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		t.Skipf("%s is not set, so no PostgreSQL server to test against; .ci/run starts one (bash .ci/postgres.sh)", pgDSNEnv)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("%s=%q: %v", pgDSNEnv, dsn, err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Skipf("no PostgreSQL server reachable at %s=%q (%v); .ci/run starts one (bash .ci/postgres.sh)", pgDSNEnv, dsn, err)
	}
	return dsn
}

// postgresEnv gives each test its own schema on the server at dsn, dropped
// when the test ends.
func postgresEnv(t *testing.T, dsn string) *env {
	open := func() *sql.DB {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	db := open()
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "hf_fence_" + hex.EncodeToString(b[:])
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := db.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return &env{
		t:      t,
		ph:     fence.Dollar,
		serial: "BIGSERIAL PRIMARY KEY",
		open:   open,
		qual:   func(base string) string { return schema + "." + base },
		db:     db,
	}
}

func TestPostgres(t *testing.T) {
	dsn := reachablePostgres(t)
	runSuite(t, func(t *testing.T) *env { return postgresEnv(t, dsn) })
}
