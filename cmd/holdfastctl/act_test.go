package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// TestLeaveCommand: leave needs the node's name in -confirm (a wrong one
// changes nothing), is refused with three voters and no spare (exit 1, the
// node's reason), and with -force decommissions the node, which stops.
func TestLeaveCommand(t *testing.T) {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 3})
	cl.WaitFormed(settle)
	c := cl.Node(2).C()
	ready, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	if err := c.WaitReady(ready); err != nil {
		t.Fatalf("node2 before the leaves: %v", err)
	}
	srv := httptest.NewServer(admin.New(c, admin.Options{Authorize: admin.LoopbackOnly}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"leave", "-confirm", "node0"}, `confirmation "node0" does not name this node, "node2": nothing done`},
		{[]string{"leave", "-confirm", "node2"}, "leave refused"},
	} {
		code, out, errOut := ctl(append([]string{"-addr", addr}, tc.args...)...)
		if code != 1 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if err := c.Ready(); err != nil {
		t.Fatalf("node2 after refused leaves: %v", err)
	}
	out := mustCtl(t, "-addr", addr, "leave", "-confirm", "node2", "-force", "-json")
	var res admin.LeaveResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Left || res.Name != "node2" {
		t.Fatalf("leave -json: %q (%v)", out, err)
	}
	select {
	case <-c.Done():
	case <-time.After(settle):
		t.Fatal("node2 still running after its leave")
	}
}

// TestDataCommands: peers and recover refuse a running node's data dir;
// peers shows a stopped voter's configuration; recover wants -confirm with
// the recorded name, refuses a non-voter's data dir, and rewrites a
// voter's configuration to itself alone, which then starts and leads.
func TestDataCommands(t *testing.T) {
	cl := holdfasttest.Start(t, holdfasttest.Options{Nodes: 4, Voters: 3})
	leader := cl.WaitFormed(settle)
	cl.WaitFor("3 voters, 1 non-voter", settle, func() error {
		v, nv, err := cl.Suffrages()
		if err == nil && (v != 3 || nv != 1) {
			return holdfasttest.ErrNotYet
		}
		return err
	})
	spare := -1
	for _, m := range leader.C().Members() {
		if m.Suffrage == "non-voter" {
			for _, n := range cl.Nodes() {
				if n.Name == m.Name {
					spare = n.Index
				}
			}
		}
	}
	dir := leader.DataDir
	for _, sub := range [][]string{{"data", "peers", dir}, {"data", "recover", "-confirm", leader.Name, dir}} {
		if code, _, errOut := ctl(sub...); code != 1 || !strings.Contains(errOut, "a node is running on "+dir) ||
			!strings.Contains(errOut, filepath.Join(dir, "raft", "LOCK")) {
			t.Errorf("%v on a running node: exit %d, stderr %q", sub, code, errOut)
		}
	}
	for i := range 4 {
		cl.Kill(i)
	}
	out := mustCtl(t, "data", "peers", dir)
	for _, want := range []string{leader.Name + " (id ", "configuration  4 servers", "this node", "non-voter"} {
		if !strings.Contains(out, want) {
			t.Errorf("peers lacks %q:\n%s", want, out)
		}
	}
	var doc peersDoc
	decodeStrict(t, mustCtl(t, "data", "peers", "-json", dir), &doc)
	if doc.Name != leader.Name || len(doc.Servers) != 4 || doc.LastIndex == 0 {
		t.Errorf("peers -json: %+v", doc)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"data", "recover", dir}, 2, "give -confirm NAME"},
		{[]string{"data", "recover", "-confirm", "someone", dir}, 1, "does not name the node"},
		{[]string{"data", "recover", "-confirm", cl.Node(spare).Name, cl.Node(spare).DataDir}, 1, "not a voter's data dir"},
		{[]string{"data", "recover", "-confirm", leader.Name, "-keep", "nobody", dir}, 1, "nobody is not a voter"},
		{[]string{"data", "peers", t.TempDir()}, 1, "not a holdfast data dir"},
		{[]string{"data", "bogus"}, 2, `unknown subcommand "bogus"`},
	} {
		if code, _, errOut := ctl(tc.args...); code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	out = mustCtl(t, "data", "recover", "-confirm", leader.Name, dir)
	if !strings.Contains(out, "configuration now:    "+doc.ID+" voter\n") {
		t.Errorf("recover output:\n%s", out)
	}
	decodeStrict(t, mustCtl(t, "data", "peers", "-json", dir), &doc)
	if len(doc.Servers) != 1 || !doc.Servers[0].Self || doc.SnapshotIndex == 0 {
		t.Errorf("peers after recovery: %+v", doc)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
		t.Fatalf("data dir after recovery: %v %v", entries, err)
	}
	cl.Start(leader.Index)
	if l := cl.WaitLeader(settle); l.Index != leader.Index {
		t.Errorf("leader %s after recovery, want %s", l.Name, leader.Name)
	}
}
