package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// records keeps every log record of the nodes that log to it.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *records) WithAttrs(as []slog.Attr) slog.Handler { return &withAttrs{h, as} }
func (h *records) WithGroup(string) slog.Handler         { return h }

// withAttrs is records with attributes added to each record (Logger.With).
type withAttrs struct {
	h     *records
	attrs []slog.Attr
}

func (w *withAttrs) Enabled(context.Context, slog.Level) bool { return true }
func (w *withAttrs) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(w.attrs...)
	return w.h.Handle(ctx, r)
}
func (w *withAttrs) WithAttrs(as []slog.Attr) slog.Handler {
	return &withAttrs{w.h, append(append([]slog.Attr(nil), w.attrs...), as...)}
}
func (w *withAttrs) WithGroup(string) slog.Handler { return w }

// asked returns the "by" of each "operator action requested" record for
// action.
func (h *records) asked(action string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.recs {
		if r.Message != "operator action requested" {
			continue
		}
		var act, by string
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "action":
				act = a.Value.String()
			case "by":
				by = a.Value.String()
			}
			return true
		})
		if act == action {
			out = append(out, by)
		}
	}
	return out
}

// TestOperatorCommands runs the acting commands against node0's admin
// endpoint (loopback, no TLS): semaphores lists a semaphore; drain and
// undrain move another node's shards away and back; lease release ends a
// lease held on another node, whose holder's belief ends first and whose
// waiter gets it with a new token; raft step-down moves leadership;
// raft remove-peer refuses a live node and the leader, and removes a dead
// voter. Each action is logged on the leader with who asked.
func TestOperatorCommands(t *testing.T) {
	logs := &records{}
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3, Configure: func(_ int, c *coordinator.Config) {
		c.Shards.Count = 16
		c.Logger = slog.New(logs)
	}})
	cl.WaitFormed(settle)
	srv := httptest.NewServer(admin.New(cl.Node(0).C(), admin.Options{Authorize: admin.LoopbackOnly}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	op := &operatorRun{t: t, cl: cl, addr: srv.Listener.Addr().String(), logs: logs}

	op.semaphoreListed(ctx)
	op.drainAndUndrain()
	op.releaseStuckLease(ctx)
	op.stepDownAndRemovePeer()
	for _, a := range []string{"undrain", "release-lease", "step-down", "remove-peer"} {
		if len(logs.asked(a)) == 0 {
			t.Errorf("no leader logged %s with who asked", a)
		}
	}
}

// operatorRun is TestOperatorCommands' cluster of three, reached through
// node0's admin endpoint at addr, and the records of its nodes' logs.
type operatorRun struct {
	t    *testing.T
	cl   *holdfasttest.Cluster
	addr string
	logs *records
}

// act runs holdfastctl against node0, confirmed, and returns its output.
func (op *operatorRun) act(args ...string) string {
	op.t.Helper()
	return mustCtl(op.t, append([]string{"-addr", op.addr, "-confirm", "node0"}, args...)...)
}

// semaphoreListed checks that node0 lists a semaphore permit node1 holds.
func (op *operatorRun) semaphoreListed(ctx context.Context) {
	t := op.t
	p, err := op.cl.Node(1).C().AcquireSemaphore(ctx, "importers", 2)
	if err != nil {
		t.Fatal(err)
	}
	op.cl.WaitFor("node0 to list the semaphore", settle, func() error {
		out := mustCtl(t, "-addr", op.addr, "semaphores")
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^importers +2 +1 +0 +node1:%d$`, p.Token())).MatchString(out) {
			return fmt.Errorf("%w: %s", holdfasttest.ErrNotYet, out)
		}
		return nil
	})
	p.Release(ctx)
}

// drainAndUndrain drains node2 (it owns no shard when the command
// returns), undrains it, and checks the leader logged who asked.
func (op *operatorRun) drainAndUndrain() {
	t, c2 := op.t, op.cl.Node(2).C()
	op.cl.WaitFor("node2 to own shards", settle, func() error {
		if len(c2.Owned()) == 0 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	if out := op.act("drain", "node2"); !strings.Contains(out, "node2 drained: it owns no shard and takes none until undrained.\n") {
		t.Errorf("drain: %q", out)
	}
	if n := len(c2.Owned()); n != 0 {
		t.Errorf("node2 owns %d shards after the drain returned", n)
	}
	if s, _ := c2.Session(); !s.Drained {
		t.Error("node2's session is not drained")
	}
	if out := op.act("undrain", "node2"); !strings.Contains(out, "node2 undrained: it takes shards again.\n") {
		t.Errorf("undrain: %q", out)
	}
	if by := op.logs.asked("drain"); len(by) != 1 || !strings.HasSuffix(by[0], " (no client certificate)") || !strings.HasPrefix(by[0], "127.0.0.1:") {
		t.Errorf("the leader logged the drain as asked by %q", by)
	}
}

// releaseStuckLease releases node1's lease at an operator's request: the
// holder's lease ends with ErrReleased naming who asked, node2's waiting
// Acquire gets a larger token, and releasing the free lease is refused.
func (op *operatorRun) releaseStuckLease(ctx context.Context) {
	t, c0, c1, c2 := op.t, op.cl.Node(0).C(), op.cl.Node(1).C(), op.cl.Node(2).C()
	l, err := c1.Acquire(ctx, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	next := make(chan *coordinator.Lease, 1)
	go func() {
		nl, err := c2.Acquire(ctx, "stuck")
		if err != nil {
			t.Error(err)
		}
		next <- nl
	}()
	op.cl.WaitFor("node2 waiting for stuck", settle, func() error {
		if ls := c0.Leases(); len(ls) != 1 || ls[0].Waiters != 1 {
			return holdfasttest.ErrNotYet
		}
		return nil
	})
	out := op.act("lease", "release", "stuck")
	want := fmt.Sprintf(`released lease "stuck" (token %d) held by node1: its node ended its belief, then released it.`, l.Token())
	if !strings.Contains(out, want) {
		t.Errorf("lease release: %q, want %q", out, want)
	}
	cause := context.Cause(l.Context())
	if !errors.Is(cause, coordinator.ErrReleased) || !strings.Contains(cause.Error(), "at an operator's request (by 127.0.0.1:") ||
		!errors.Is(l.Checkpoint(), coordinator.ErrReleased) {
		t.Errorf("the holder's lease ended with %v (Checkpoint %v)", cause, l.Checkpoint())
	}
	if nl := <-next; nl == nil || nl.Token() <= l.Token() {
		t.Fatalf("the waiter's grant after the release: %v", nl)
	} else {
		nl.Release(ctx)
	}
	code, _, errOut := ctl("-addr", op.addr, "-confirm", "node0", "lease", "release", "stuck")
	if code != 1 || !strings.Contains(errOut, `409 Conflict to POST /v1/leases/release: holdfast: operation refused: lease "stuck" is not held`) {
		t.Errorf("releasing a free lease: exit %d, %q", code, errOut)
	}
}

// stepDownAndRemovePeer steps the leader down, checks the refusals of
// remove-peer (a live node, the leader, an unknown server), then kills a
// voter and removes it once every running node sees it dead.
func (op *operatorRun) stepDownAndRemovePeer() {
	t, cl := op.t, op.cl
	before := cl.WaitLeader(settle)
	out := op.act("raft", "step-down")
	after := cl.WaitLeader(settle)
	if after == before || !strings.Contains(out, before.Name+" stepped down; the raft leader is now ") {
		t.Errorf("step-down: leader %s then %s; %q", before.Name, after.Name, out)
	}

	alive := cl.Node(1)
	if alive == after {
		alive = cl.Node(2)
	}
	for _, tc := range []struct{ target, want string }{
		{alive.Name, alive.Name + " is alive: decommission it with holdfastctl -addr ITS_ADMIN_ADDRESS -confirm " + alive.Name + " leave"},
		{after.Name, after.Name + " is the raft leader: step it down first (holdfastctl raft step-down)"},
		{"nobody", `no server "nobody" in the raft configuration`},
	} {
		code, _, errOut := ctl("-addr", op.addr, "-confirm", "node0", "raft", "remove-peer", tc.target)
		if code != 1 || !strings.Contains(errOut, "409 Conflict") || !strings.Contains(errOut, tc.want) {
			t.Errorf("remove-peer %s: exit %d, %q; want %q", tc.target, code, errOut, tc.want)
		}
	}
	victim := alive // neither node0 (the admin endpoint) nor the leader
	id := victim.C().ID()
	cl.Kill(victim.Index)
	// The leader refuses to remove a server its own gossip shows alive:
	// wait until every running node, the leader among them, sees it dead
	// (node0 seeing it dead first, the leader still refused on a loaded
	// machine).
	cl.WaitFor("the others to see the victim dead", settle, func() error {
		for _, n := range cl.Running() {
			for _, m := range n.C().Members() {
				if m.ID == id && m.State == coordinator.MemberAlive {
					return fmt.Errorf("%w: %s sees %s alive", holdfasttest.ErrNotYet, n.Name, victim.Name)
				}
			}
		}
		return nil
	})
	out = op.act("raft", "remove-peer", id)
	if !strings.Contains(out, "removed "+victim.Name+" from the raft configuration") {
		t.Errorf("remove-peer of the dead voter: %q", out)
	}
	cl.WaitFor("two voters left", settle, func() error {
		if v := cl.Node(0).C().Voters(); len(v) != 2 {
			return fmt.Errorf("%w: voters %v", holdfasttest.ErrNotYet, v)
		}
		return nil
	})
}
