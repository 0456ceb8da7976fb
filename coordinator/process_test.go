//go:build linux

package coordinator_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
)

// This file is the lease holder that TestSIGSTOPHolderIsFenced
// (process_sigstop_test.go) runs in a real OS process (the test binary
// re-executed with HOLDFAST_CHILD set, see TestMain), and the helpers that
// read what it prints on one system-wide monotonic clock.

const (
	childEnvRole = "HOLDFAST_CHILD"
	childEnvJoin = "HOLDFAST_CHILD_JOIN"
	childEnvDB   = "HOLDFAST_CHILD_DB"

	childLease = "job"
)

func init() { childMain = runChild }

// monoNow reads CLOCK_MONOTONIC, which every process on the machine shares
// (Go's own monotonic readings come from it too).
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// openJobsDB opens the SQLite file at path in WAL mode; transactions begin
// IMMEDIATE and wait up to busyMillis for the write lock.
func openJobsDB(path string, busyMillis int) (*sql.DB, error) {
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_txlock=immediate", path, busyMillis)
	return sql.Open("sqlite", dsn)
}

func jobsFence() (*fence.SQL, error) {
	return fence.NewSQL(fence.SQLConfig{Table: "jobs", KeyColumn: "id", FenceColumn: "fence", Placeholder: fence.Question})
}

// fencedWrite advances the fence of the job row to token and records an
// accepted write, in one transaction.
func fencedWrite(ctx context.Context, db *sql.DB, f *fence.SQL, token uint64, writer string) error {
	return f.Guard(ctx, db, childLease, token, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO writes (token, writer, accepted) VALUES (?, ?, 1)", int64(token), writer)
		return err
	})
}

// runChild is the child process: it joins the cluster as a raft non-voter,
// campaigns for the lease, and then, every 20ms, prints how long it
// believes it holds the lease and writes under its token without checking
// the lease first (a pause between check and write is what it models). It
// exits 0 after its first fenced write.
func runChild() int {
	if os.Getenv(childEnvRole) == "owner" { // see process_owner_child_test.go
		return runOwnerChild()
	}
	if role := os.Getenv(childEnvRole); role != "holder" {
		fmt.Fprintf(os.Stderr, "child: unknown role %q\n", role)
		return 2
	}
	join, dbPath := os.Getenv(childEnvJoin), os.Getenv(childEnvDB)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "child: "+format+"\n", args...)
		return 2
	}
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}

	// The parent kills the child on cleanup; this bounds it even if the
	// parent cannot.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	db, err := openJobsDB(dbPath, 20000)
	if err != nil {
		return fail("open db: %v", err)
	}
	defer db.Close()
	f, err := jobsFence()
	if err != nil {
		return fail("fence: %v", err)
	}

	cfg := coordinator.DefaultLocalConfig()
	cfg.Logger = log
	c, stop, err := startChildNonVoter(cfg, "child", join)
	if err != nil {
		return fail("coordinator.New: %v", err)
	}
	defer stop()

	l, err := c.Acquire(ctx, childLease)
	if err != nil {
		return fail("acquire: %v", err)
	}
	token := l.Token()
	say("leased %d", token)
	go func() {
		select {
		case <-l.Done():
			say("lease-lost %d cause %v", monoNow(), context.Cause(l.Context()))
		case <-ctx.Done():
		}
	}()

	return writeUntilFenced(ctx, l, db, f, say, fail)
}

// writeUntilFenced is the holder child's loop: every 20ms it prints how
// long it believes it holds l and writes under l's token without checking
// the lease first. It returns 0 after its first fenced write (recorded as
// a rejected write), or what fail returns.
func writeUntilFenced(ctx context.Context, l *coordinator.Lease, db *sql.DB, f *fence.SQL,
	say func(string, ...any), fail func(string, ...any) int) int {
	token := l.Token()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		// Remaining first, then the clock: the printed deadline is never
		// earlier than the one the node holds.
		rem := l.Remaining()
		say("belief %d token %d rem %d", monoNow()+int64(rem), token, int64(rem))

		// No Checkpoint here on purpose.
		err := fencedWrite(ctx, db, f, token, "child")
		switch {
		case err == nil:
			say("wrote %d", token)
		case errors.Is(err, fence.ErrFenced):
			if _, err := db.ExecContext(ctx, "INSERT INTO writes (token, writer, accepted) VALUES (?, 'child', 0)", int64(token)); err != nil {
				return fail("recording the rejection: %v", err)
			}
			say("fenced %d", token)
			fmt.Fprintf(os.Stderr, "child: fenced: %v\n", err)
			say("done")
			return 0
		default:
			fmt.Fprintf(os.Stderr, "child: write failed (not fenced): %v\n", err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fail("timed out before being fenced")
		}
	}
}

// beliefs returns the belief deadlines printed in lines while the child
// still had time left (rem > 0), and the last of them.
func beliefs(lines []string) (all []int64, last int64, ok bool) {
	for _, ln := range lines {
		var at, rem int64
		var tok uint64
		if _, err := fmt.Sscanf(ln, "belief %d token %d rem %d", &at, &tok, &rem); err != nil || rem <= 0 {
			continue
		}
		all = append(all, at)
		last, ok = at, true
	}
	return all, last, ok
}

// processState returns the state letter of /proc/pid/stat (T when stopped).
func processState(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+3 > len(s) {
		return "", fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	return s[i+2 : i+3], nil
}

// startChildNonVoter starts a child process's coordinator: named name, on
// loopback ports the OS picks, joining the cluster at join as a raft
// non-voter (no data dir), so that killing or stopping the child leaves the
// quorum alone. stop closes it, giving up after 10 s.
func startChildNonVoter(cfg coordinator.Config, name, join string) (c *coordinator.Coordinator, stop func(), err error) {
	cfg.NodeName = name
	cfg.GossipAddr = "127.0.0.1:0"
	cfg.RPCAddr = "127.0.0.1:0"
	cfg.Join = []string{join}
	cfg.DataDir = ""
	cfg.Cluster.BootstrapExpect = 0
	cfg.Cluster.Voters = 3
	c, err = coordinator.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	stop = func() {
		done := make(chan struct{})
		go func() { _ = c.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			fmt.Fprintln(os.Stderr, "child: Close did not return within 10s")
		}
	}
	return c, stop, nil
}
