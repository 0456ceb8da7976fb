//go:build linux

package coordinator_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// This file runs a lease holder in a real OS process (the test binary
// re-executed with HOLDFAST_CHILD set, see TestMain), stops it with SIGSTOP
// and checks, on one system-wide monotonic clock and in a real SQLite file,
// that it lost its lease before the next grant and that its zombie write
// is fenced.

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
	if os.Getenv(childEnvRole) == "owner" { // see process_shard_test.go
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

// childOutput collects the child's stdout by lines.
type childOutput struct {
	mu    sync.Mutex
	lines []string
	part  []byte
}

func (o *childOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.part = append(o.part, p...)
	for {
		i := bytes.IndexByte(o.part, '\n')
		if i < 0 {
			break
		}
		o.lines = append(o.lines, string(o.part[:i]))
		o.part = o.part[i+1:]
	}
	return len(p), nil
}

func (o *childOutput) Lines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.lines...)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
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

func TestSIGSTOPHolderIsFenced(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a child process and waits out a session TTL")
	}
	const timeout = 90 * time.Second
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	cl.WaitFormed(formTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 4*timeout)
	defer cancel()

	// The protected resource: a real SQLite file in WAL mode.
	dbPath := filepath.Join(t.TempDir(), "jobs.db")
	db, err := openJobsDB(dbPath, 20000)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	for _, q := range []string{
		"CREATE TABLE jobs (id TEXT PRIMARY KEY, fence BIGINT NOT NULL, value TEXT)",
		"CREATE TABLE writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, token BIGINT, writer TEXT, accepted INTEGER)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	f, err := jobsFence()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Init(ctx, db, childLease); err != nil {
		t.Fatal(err)
	}
	// probe takes the write lock without waiting: it tells whether a
	// stopped child is in the middle of a write transaction.
	probe, err := openJobsDB(dbPath, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = probe.Close() })
	probe.SetMaxOpenConns(1)

	// The child: this test binary again, running runChild.
	parent := cl.Node(0).C()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		childEnvRole+"=holder",
		childEnvJoin+"="+parent.GossipAddr(),
		childEnvDB+"="+dbPath,
	)
	out, stderr := &childOutput{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = syscall.Kill(pid, syscall.SIGCONT)
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("child stdout:\n%s", strings.Join(out.Lines(), "\n"))
			t.Logf("child stderr:\n%s", stderr.String())
		}
	})
	childExited := func() error {
		select {
		case <-exited:
			return fmt.Errorf("child exited early: %v", waitErr)
		default:
			return nil
		}
	}

	// The child holds the lease and has written under it.
	var childToken uint64
	cl.WaitFor("the child to hold the lease and write 3 times", timeout, func() error {
		if err := childExited(); err != nil {
			return err
		}
		h, ok := parent.Holder(childLease)
		if !ok || h.Node.Name != "child" {
			return fmt.Errorf("%w: holder %+v", holdfasttest.ErrNotYet, h)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM writes WHERE writer = 'child' AND accepted = 1").Scan(&n); err != nil {
			return err
		}
		if n < 3 {
			return fmt.Errorf("%w: %d accepted child writes", holdfasttest.ErrNotYet, n)
		}
		childToken = h.Token
		return nil
	})
	leased := fmt.Sprintf("leased %d", childToken)
	if !slices.Contains(out.Lines(), leased) {
		t.Fatalf("the replica shows the child holding token %d, but the child did not print %q", childToken, leased)
	}

	// Stop the child while it is outside a write transaction: a process
	// stopped holding SQLite's write lock would block every writer, the
	// new holder included (a database with row locks and a lock timeout
	// would not care). Stopped, it cannot start one.
	var stopAttempts int
	cl.WaitFor("the child stopped outside a write transaction", timeout, func() error {
		if err := childExited(); err != nil {
			return err
		}
		stopAttempts++
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return err
		}
		if err := holdfasttest.Poll(10*time.Second, func() error {
			st, err := processState(pid)
			if err != nil {
				return err
			}
			if st != "T" {
				return fmt.Errorf("%w: child state %s", holdfasttest.ErrNotYet, st)
			}
			return nil
		}); err != nil {
			return err
		}
		tx, err := probe.BeginTx(ctx, nil)
		if err == nil {
			return tx.Rollback()
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			return err
		}
		return fmt.Errorf("%w: stopped inside a transaction (%v)", holdfasttest.ErrNotYet, err)
	})
	stoppedAt := monoNow()

	// The next holder: Acquire returns once the leader has expired the
	// child's session and granted the lease.
	l, err := parent.Acquire(ctx, childLease)
	if err != nil {
		t.Fatal(err)
	}
	grantSeen := monoNow()
	defer func() {
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer rcancel()
		_ = l.Release(rctx)
	}()
	if st, err := processState(pid); err != nil || st != "T" {
		t.Fatalf("child not stopped when the lease was granted: state %q, %v", st, err)
	}
	// The child is stopped and its output drained long ago (a TTL passed).
	_, lastBelief, ok := beliefs(out.Lines())
	if !ok {
		t.Fatal("the child printed no belief with time left")
	}
	t.Logf("stopped the child %d time(s); last belief before the stop ends %v after the stop; grant seen %v after the stop",
		stopAttempts, time.Duration(lastBelief-stoppedAt), time.Duration(grantSeen-stoppedAt))
	t.Logf("gap between the child's last belief deadline and the grant: %v", time.Duration(grantSeen-lastBelief))
	if lastBelief >= grantSeen {
		t.Errorf("I1: the child believed until %d, the grant was seen at %d (%v before the child's belief ended)",
			lastBelief, grantSeen, time.Duration(lastBelief-grantSeen))
	}
	if l.Token() <= childToken {
		t.Errorf("I2: new token %d is not above the child's %d", l.Token(), childToken)
	}
	if err := fencedWrite(ctx, db, f, l.Token(), "parent"); err != nil {
		t.Fatalf("the new holder's write: %v", err)
	}

	// Resume the zombie: its next write must be refused.
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(timeout):
		t.Fatalf("the child did not exit within %v of SIGCONT", timeout)
	}
	if waitErr != nil {
		t.Fatalf("child: %v", waitErr)
	}
	lines := out.Lines()
	if !slices.Contains(lines, fmt.Sprintf("fenced %d", childToken)) || !slices.Contains(lines, "done") {
		t.Fatalf("the child exited without reporting a fenced write")
	}
	// Every belief the child ever printed with time left, after SIGCONT
	// included, ended before the grant.
	all, _, _ := beliefs(lines)
	for _, at := range all {
		if at >= grantSeen {
			t.Errorf("I1: the child printed a belief until %d, after the grant at %d", at, grantSeen)
		}
	}
	for _, ln := range lines {
		var at int64
		if _, err := fmt.Sscanf(ln, "lease-lost %d", &at); err == nil {
			t.Logf("the child's lease context ended %v after the grant (its timer ran late: it was stopped)",
				time.Duration(at-grantSeen))
		}
	}

	// The resource's view.
	rows, err := db.QueryContext(ctx, "SELECT seq, token, writer, accepted FROM writes ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	var (
		highest              int64
		rejected, childAfter int
		parentSeen           bool
		acceptedChild        int
	)
	for rows.Next() {
		var seq, token, accepted int64
		var writer string
		if err := rows.Scan(&seq, &token, &writer, &accepted); err != nil {
			t.Fatal(err)
		}
		switch {
		case accepted == 0:
			if writer == "child" {
				rejected++
			}
		case token < highest:
			t.Errorf("I4: write %d by %s accepted with token %d after token %d", seq, writer, token, highest)
		default:
			highest = token
		}
		if accepted == 1 && writer == "child" {
			acceptedChild++
			if parentSeen {
				childAfter++
			}
		}
		if accepted == 1 && writer == "parent" {
			parentSeen = true
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if rejected == 0 {
		t.Error("I4: no rejected write from the child")
	}
	if childAfter > 0 {
		t.Errorf("I4: %d child writes accepted after the new holder's", childAfter)
	}
	h, err := f.Highest(ctx, db, childLease)
	if err != nil {
		t.Fatal(err)
	}
	if h != l.Token() {
		t.Errorf("fence is %d, want the new holder's token %d", h, l.Token())
	}
	t.Logf("child token %d: %d accepted writes, %d rejected; new holder token %d", childToken, acceptedChild, rejected, l.Token())
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
