//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// This file runs ledger processes for ledger_test.go: it builds the
// binary, starts and signals processes, reads their event lines and asks
// their admin endpoints.

// errNotYet marks a condition that poll keeps waiting for.
var errNotYet = testkit.ErrNotYet

// poll waits, as testkit.Eventually does, until cond returns nil, and
// fails the test when cond returns an error that is not errNotYet (at
// once) or when timeout passes.
func poll(t *testing.T, what string, timeout time.Duration, cond func() error) {
	t.Helper()
	var fatal error
	testkit.Eventually(t, what, timeout, func() error {
		err := cond()
		if err != nil && !errors.Is(err, errNotYet) {
			fatal = err
			return nil
		}
		return err
	})
	if fatal != nil {
		t.Fatalf("waiting for %s: %v", what, fatal)
	}
}

// notYet returns an error that poll waits on.
func notYet(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNotYet, fmt.Sprintf(format, args...))
}

// event is one line of a process's standard output: a name and key=value
// pairs.
type event struct {
	name string
	kv   map[string]string
}

func parseEvent(line string) event {
	f := strings.Fields(line)
	e := event{kv: map[string]string{}}
	if len(f) == 0 {
		return e
	}
	e.name = f[0]
	for _, p := range f[1:] {
		if k, v, ok := strings.Cut(p, "="); ok {
			e.kv[k] = v
		}
	}
	return e
}

// lineLog collects a process's standard output by lines and finds its
// events there.
type lineLog struct{ testkit.Lines }

// events returns the events named name printed so far.
func (o *lineLog) events(name string) []event {
	var out []event
	for _, ln := range o.Lines.Lines() {
		if e := parseEvent(ln); e.name == name {
			out = append(out, e)
		}
	}
	return out
}

// has reports whether an event named name with every pair of kv was
// printed.
func (o *lineLog) has(name string, kv map[string]string) bool {
	for _, e := range o.events(name) {
		match := true
		for k, v := range kv {
			match = match && e.kv[k] == v
		}
		if match {
			return true
		}
	}
	return false
}

func (o *lineLog) tail(n int) string {
	lines := o.Lines.Lines()
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// proc is a running ledger process.
type proc struct {
	name   string
	pid    int
	out    *lineLog
	errLog string       // path of its standard error
	http   string       // its -http address, once ready
	client *http.Client // reaches http; nil: httpClient
	// admin, if set, is the HTTPS client for an -http served with TLS;
	// nil: plain HTTP with client.
	admin *http.Client

	exited  chan struct{}
	waitErr error
}

// startProc starts the ledger binary as node name; it is killed and reaped
// when the test ends, and its output logged if the test failed.
func startProc(t *testing.T, bin, name string, args ...string) *proc {
	t.Helper()
	return startCmd(t, name, exec.Command(bin, append([]string{"-node", name}, args...)...))
}

// startCmd starts cmd, a ledger process for node name, as startProc does.
func startCmd(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, out: &lineLog{}, errLog: filepath.Join(t.TempDir(), name+".stderr"), exited: make(chan struct{})}
	stderr, err := os.Create(p.errLog)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = p.out, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.pid = cmd.Process.Pid
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			b, _ := os.ReadFile(p.errLog)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			t.Logf("%s stdout (tail):\n%s", name, p.out.tail(30))
			t.Logf("%s stderr (tail):\n%s", name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	return p
}

// kill kills the process (if it still runs, stopped or not) and reaps it.
func (p *proc) kill() {
	select {
	case <-p.exited:
	default:
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		_ = syscall.Kill(p.pid, syscall.SIGCONT)
		<-p.exited
	}
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.pid, sig); err != nil {
		t.Fatalf("%s: kill %v: %v", p.name, sig, err)
	}
}

// alive returns an error once the process has exited.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %v", p.name, p.waitErr)
	default:
		return nil
	}
}

// waitReady waits for the ready line (printed once the node is a member
// of a formed cluster with a session) and returns its fields.
func (p *proc) waitReady(t *testing.T, timeout time.Duration) event {
	t.Helper()
	return p.waitLine(t, "ready", timeout)
}

// waitListening waits for the listening line (printed as soon as the node
// serves HTTP and gossip) and returns its fields.
func (p *proc) waitListening(t *testing.T, timeout time.Duration) event {
	t.Helper()
	return p.waitLine(t, "listening", timeout)
}

// waitLine waits for the first line of the named event and returns its
// fields; its http field becomes the node's admin address.
func (p *proc) waitLine(t *testing.T, name string, timeout time.Duration) event {
	t.Helper()
	var ev event
	poll(t, p.name+" "+name, timeout, func() error {
		if err := p.alive(); err != nil {
			return err
		}
		evs := p.out.events(name)
		if len(evs) == 0 {
			return notYet("no %s line", name)
		}
		ev = evs[0]
		return nil
	})
	p.http = ev.kv["http"]
	return ev
}

// state returns the process state letter from /proc (T when stopped).
func (p *proc) state() (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return "", err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+3 > len(s) {
		return "", fmt.Errorf("unexpected /proc/%d/stat: %q", p.pid, s)
	}
	return s[i+2 : i+3], nil
}

// httpClient keeps no idle connections, so no goroutine outlives a test.
var httpClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// get asks p's admin endpoint for path, over HTTPS when p.admin is set.
func (p *proc) get(path string) (*http.Response, error) {
	if p.admin != nil {
		return p.admin.Get("https://" + p.http + path)
	}
	return p.httpc().Get("http://" + p.http + path)
}

// httpc is the client that reaches p's plain-HTTP admin endpoint.
func (p *proc) httpc() *http.Client {
	if p.client != nil {
		return p.client
	}
	return httpClient
}

// status asks p's admin endpoint for its status.
func (p *proc) status() (admin.Status, error) {
	var st admin.Status
	resp, err := p.get("/v1/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET /v1/status: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// shards asks p's admin endpoint for the shard table.
func (p *proc) shards() (admin.ShardList, error) {
	var list admin.ShardList
	resp, err := p.get("/v1/shards")
	if err != nil {
		return list, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return list, fmt.Errorf("GET /v1/shards: %s", resp.Status)
	}
	return list, json.NewDecoder(resp.Body).Decode(&list)
}

// raftLeader returns the name of the raft leader p knows of ("" if none).
func (p *proc) raftLeader() string {
	resp, err := p.get("/v1/status")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var st admin.Status
	if json.NewDecoder(resp.Body).Decode(&st) != nil || st.Leader == nil {
		return ""
	}
	return st.Leader.Name
}

// leaderElected polls p's status, in a goroutine, until it names a raft
// leader that gone does not rule out, and delivers the time from since
// until then (0 when none came within 90 s). Receive from it before
// changing what gone reads.
func (p *proc) leaderElected(since time.Time, gone func(name string) bool) <-chan time.Duration {
	elected := make(chan time.Duration, 1)
	go func() {
		var took time.Duration
		_ = testkit.Poll(90*time.Second, func() error {
			if l := p.raftLeader(); l == "" || gone(l) {
				return testkit.ErrNotYet
			}
			took = time.Since(since)
			return nil
		})
		elected <- took
	}()
	return elected
}

// ownedBy returns the shards list shows owned by node, with their tokens.
func ownedBy(list admin.ShardList, node string) map[uint32]uint64 {
	out := map[uint32]uint64{}
	for _, r := range list.Shards {
		if r.Owner == node {
			out[r.Shard] = r.Token
		}
	}
	return out
}
