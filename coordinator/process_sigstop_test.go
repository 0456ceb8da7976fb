//go:build linux

package coordinator_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/fence"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// jobsResource is the protected resource of TestSIGSTOPHolderIsFenced: a
// real SQLite file in WAL mode with a fenced jobs row and a log of writes.
type jobsResource struct {
	path  string
	db    *sql.DB
	probe *sql.DB // one connection that takes the write lock without waiting
	fence *fence.SQL
}

// newJobsResource creates the database, its tables and the fence row.
func newJobsResource(ctx context.Context, t *testing.T) *jobsResource {
	t.Helper()
	r := &jobsResource{path: filepath.Join(t.TempDir(), "jobs.db")}
	var err error
	if r.db, err = openJobsDB(r.path, 20000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.db.Close() })
	var mode string
	if err := r.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	for _, q := range []string{
		"CREATE TABLE jobs (id TEXT PRIMARY KEY, fence BIGINT NOT NULL, value TEXT)",
		"CREATE TABLE writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, token BIGINT, writer TEXT, accepted INTEGER)",
	} {
		if _, err := r.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if r.fence, err = jobsFence(); err != nil {
		t.Fatal(err)
	}
	if err := r.fence.Init(ctx, r.db, childLease); err != nil {
		t.Fatal(err)
	}
	// The probe tells whether a stopped child is in the middle of a write
	// transaction.
	if r.probe, err = openJobsDB(r.path, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.probe.Close() })
	r.probe.SetMaxOpenConns(1)
	return r
}

// acceptedWrites counts the accepted writes by writer.
func (r *jobsResource) acceptedWrites(ctx context.Context, writer string) (int, error) {
	var n int
	err := r.db.QueryRowContext(ctx, "SELECT count(*) FROM writes WHERE writer = ? AND accepted = 1", writer).Scan(&n)
	return n, err
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
	res := newJobsResource(ctx, t)

	// The child: this test binary again, running runChild.
	parent := cl.Node(0).C()
	child := startChild(t, "child",
		childEnvRole+"=holder",
		childEnvJoin+"="+parent.GossipAddr(),
		childEnvDB+"="+res.path,
	)
	childToken := waitChildWrites(ctx, t, cl, parent, child, res, timeout)
	stoppedAt := stopOutsideTx(ctx, t, cl, child, res, timeout)

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
	if st, err := processState(child.pid); err != nil || st != "T" {
		t.Fatalf("child not stopped when the lease was granted: state %q, %v", st, err)
	}
	// The child is stopped and its output drained long ago (a TTL passed).
	_, lastBelief, ok := beliefs(child.out.Lines())
	if !ok {
		t.Fatal("the child printed no belief with time left")
	}
	t.Logf("last belief before the stop ends %v after the stop; grant seen %v after the stop",
		time.Duration(lastBelief-stoppedAt), time.Duration(grantSeen-stoppedAt))
	t.Logf("gap between the child's last belief deadline and the grant: %v", time.Duration(grantSeen-lastBelief))
	if lastBelief >= grantSeen {
		t.Errorf("I1: the child believed until %d, the grant was seen at %d (%v before the child's belief ended)",
			lastBelief, grantSeen, time.Duration(lastBelief-grantSeen))
	}
	if l.Token() <= childToken {
		t.Errorf("I2: new token %d is not above the child's %d", l.Token(), childToken)
	}
	if err := fencedWrite(ctx, res.db, res.fence, l.Token(), "parent"); err != nil {
		t.Fatalf("the new holder's write: %v", err)
	}

	resumeZombie(t, child, childToken, grantSeen, timeout)
	checkFencedView(ctx, t, res, childToken, l.Token())
}

// waitChildWrites waits until the child holds the lease (as parent's
// replica shows it) and has written under it three times, and returns its
// token.
func waitChildWrites(ctx context.Context, t *testing.T, cl *holdfasttest.Cluster, parent *coordinator.Coordinator,
	child *childProc, res *jobsResource, timeout time.Duration) uint64 {
	t.Helper()
	var childToken uint64
	cl.WaitFor("the child to hold the lease and write 3 times", timeout, func() error {
		if err := child.exitedEarly(); err != nil {
			return err
		}
		h, ok := parent.Holder(childLease)
		if !ok || h.Node.Name != "child" {
			return fmt.Errorf("%w: holder %+v", holdfasttest.ErrNotYet, h)
		}
		n, err := res.acceptedWrites(ctx, "child")
		if err != nil {
			return err
		}
		if n < 3 {
			return fmt.Errorf("%w: %d accepted child writes", holdfasttest.ErrNotYet, n)
		}
		childToken = h.Token
		return nil
	})
	leased := fmt.Sprintf("leased %d", childToken)
	if !slices.Contains(child.out.Lines(), leased) {
		t.Fatalf("the replica shows the child holding token %d, but the child did not print %q", childToken, leased)
	}
	return childToken
}

// stopOutsideTx stops the child with SIGSTOP while it is outside a write
// transaction, and returns when (on the monotonic clock all processes
// share). A process stopped holding SQLite's write lock would block every
// writer, the new holder included (a database with row locks and a lock
// timeout would not care). Stopped, it cannot start one.
func stopOutsideTx(ctx context.Context, t *testing.T, cl *holdfasttest.Cluster, child *childProc,
	res *jobsResource, timeout time.Duration) int64 {
	t.Helper()
	var attempts int
	cl.WaitFor("the child stopped outside a write transaction", timeout, func() error {
		if err := child.exitedEarly(); err != nil {
			return err
		}
		attempts++
		if err := syscall.Kill(child.pid, syscall.SIGSTOP); err != nil {
			return err
		}
		if err := holdfasttest.Poll(10*time.Second, func() error {
			st, err := processState(child.pid)
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
		tx, err := res.probe.BeginTx(ctx, nil)
		if err == nil {
			return tx.Rollback()
		}
		if err := syscall.Kill(child.pid, syscall.SIGCONT); err != nil {
			return err
		}
		return fmt.Errorf("%w: stopped inside a transaction (%v)", holdfasttest.ErrNotYet, err)
	})
	t.Logf("stopped the child %d time(s)", attempts)
	return monoNow()
}

// resumeZombie sends SIGCONT to the stopped child and checks what it
// reports: its next write was fenced, and every belief it printed with time
// left (after SIGCONT included) ended before the grant.
func resumeZombie(t *testing.T, child *childProc, childToken uint64, grantSeen int64, timeout time.Duration) {
	t.Helper()
	if err := syscall.Kill(child.pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-child.exited:
	case <-time.After(timeout):
		t.Fatalf("the child did not exit within %v of SIGCONT", timeout)
	}
	if child.waitErr != nil {
		t.Fatalf("child: %v", child.waitErr)
	}
	lines := child.out.Lines()
	if !slices.Contains(lines, fmt.Sprintf("fenced %d", childToken)) || !slices.Contains(lines, "done") {
		t.Fatalf("the child exited without reporting a fenced write")
	}
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
}

// checkFencedView checks the resource's view of the writes: accepted
// tokens never go down, the child's zombie write was refused and none of
// its writes came after the new holder's, and the fence ends at newToken.
func checkFencedView(ctx context.Context, t *testing.T, res *jobsResource, childToken, newToken uint64) {
	t.Helper()
	rows, err := res.db.QueryContext(ctx, "SELECT seq, token, writer, accepted FROM writes ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var (
		highest                             int64
		rejected, childAfter, acceptedChild int
		parentSeen                          bool
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
	if rejected == 0 {
		t.Error("I4: no rejected write from the child")
	}
	if childAfter > 0 {
		t.Errorf("I4: %d child writes accepted after the new holder's", childAfter)
	}
	h, err := res.fence.Highest(ctx, res.db, childLease)
	if err != nil {
		t.Fatal(err)
	}
	if h != newToken {
		t.Errorf("fence is %d, want the new holder's token %d", h, newToken)
	}
	t.Logf("child token %d: %d accepted writes, %d rejected; new holder token %d", childToken, acceptedChild, rejected, newToken)
}
