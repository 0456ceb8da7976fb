//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/holdfasttest"
)

// The README's quick start, run as written: its shell blocks are parsed
// out of README.md, so the test fails when the README drifts. Two things
// are rewritten, and only these: "go run ./cmd/holdfastctl" and "go run
// ./examples/ledger" become the binaries built once (the same programs,
// without a link per command), and each port number becomes a reserved
// one (holdfasttest.ReservePort: the README's fixed ports may be taken on
// a CI host). HOME is a new directory, so ~/.holdfast is the test's own,
// and HOLDFASTCTL_ADDR points holdfastctl's default at n1's rewritten
// -http port.

// quickStartHeading opens the README section the test runs.
const quickStartHeading = "### A secure three-node cluster on one machine"

// quickStartBlocks returns the lines of each ```sh block of the README's
// quick-start section.
func quickStartBlocks(t *testing.T) (prose string, blocks [][]string) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, quickStartHeading)
	if i < 0 {
		t.Fatalf("README.md has no %q section", quickStartHeading)
	}
	s = s[i+len(quickStartHeading):]
	if j := strings.Index(s, "\n#"); j >= 0 {
		s = s[:j]
	}
	for _, part := range strings.Split(s, "```sh\n")[1:] {
		body, _, ok := strings.Cut(part, "```")
		if !ok {
			t.Fatal("an unterminated shell block in the quick start")
		}
		var lines []string
		for _, ln := range strings.Split(body, "\n") {
			if ln = strings.TrimSpace(ln); ln != "" {
				lines = append(lines, ln)
			}
		}
		blocks = append(blocks, lines)
	}
	return s, blocks
}

var loopbackPort = regexp.MustCompile(`127\.0\.0\.1:(\d+)`)

// TestREADMEQuickStart runs the README's quick start: the cert commands,
// three ledger nodes (the first one's listening line is the one the
// README shows, and the others join at its gossip address), holdfastctl
// with its defaults, then a graceful stop of each, one after the other.
func TestREADMEQuickStart(t *testing.T) {
	prose, blocks := quickStartBlocks(t)
	if len(blocks) != 3 || len(blocks[1]) != 3 {
		t.Fatalf("the quick start has %d shell blocks (%v); want certificates, three nodes, holdfastctl", len(blocks), blocks)
	}
	ledger, ctl := buildLedger(t), buildHoldfastctl(t)
	ports := map[string]string{}
	for _, block := range blocks {
		for _, ln := range block {
			for _, m := range loopbackPort.FindAllStringSubmatch(ln, -1) {
				if ports[m[1]] == "" {
					// Reserved, not only free: no other test's cluster or
					// outgoing connection is given it while the node runs
					// and after it stops.
					ports[m[1]] = strconv.Itoa(holdfasttest.ReservePort(t))
				}
			}
		}
	}
	withPorts := func(s string) string {
		return loopbackPort.ReplaceAllStringFunc(s, func(a string) string {
			if p, ok := ports[strings.TrimPrefix(a, "127.0.0.1:")]; ok {
				return "127.0.0.1:" + p
			}
			return a
		})
	}
	rewrite := func(ln string) string {
		t.Helper()
		for prog, bin := range map[string]string{"go run ./cmd/holdfastctl ": ctl + " ", "go run ./examples/ledger ": ledger + " "} {
			if strings.HasPrefix(ln, prog) {
				return bin + withPorts(strings.TrimPrefix(ln, prog))
			}
		}
		t.Fatalf("quick-start line %q runs neither holdfastctl nor the ledger", ln)
		return ""
	}
	home := t.TempDir()
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOLDFASTCTL_ADDR=127.0.0.1:" + ports["8080"]}
	sh := func(ln string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", "exec "+rewrite(ln))
		cmd.Env = env
		return cmd
	}
	for _, ln := range blocks[0] {
		if out, err := sh(ln).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", ln, err, out)
		}
	}

	const timeout = 3 * time.Minute
	var procs []*proc
	for i, ln := range blocks[1] {
		p := startCmd(t, fmt.Sprintf("n%d", i+1), sh(ln))
		procs = append(procs, p)
		ev := p.waitListening(t, timeout)
		if i > 0 {
			continue
		}
		// The README's listening line, and the join address of the others.
		want := withPorts(regexp.MustCompile("`(listening node=n1 [^`]*)`").FindStringSubmatch(prose)[1])
		if !strings.Contains("\n"+p.out.tail(1000)+"\n", "\n"+want+"\n") {
			t.Errorf("n1 printed %q, the README shows %q", p.out.tail(5), want)
		}
		for _, other := range blocks[1][1:] {
			if !strings.Contains(withPorts(other), "-join "+ev.kv["gossip"]) {
				t.Errorf("%q does not join n1's gossip address %s", other, ev.kv["gossip"])
			}
		}
	}
	for _, p := range procs {
		p.waitReady(t, timeout)
	}
	// holdfastctl's own default is the address the README gives n1.
	help := exec.Command(ctl, "-h")
	help.Env = []string{"HOME=" + home}
	out, _ := help.CombinedOutput()
	if !strings.Contains(string(out), `(default "127.0.0.1:8080")`) || !strings.Contains(prose, "`127.0.0.1:8080` is its default `-addr`") {
		t.Errorf("holdfastctl's default -addr is not the README's n1 -http:\n%s", out)
	}
	for _, ln := range blocks[2] {
		out, err := sh(ln).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", ln, err, out)
		}
		if strings.HasSuffix(ln, " status") && (!strings.Contains(string(out), "name:             n1\n") ||
			!strings.Contains(string(out), "ready:            yes\n")) {
			t.Errorf("%s:\n%s", ln, out)
		}
		if strings.HasSuffix(ln, " shards") && !regexp.MustCompile(`(?m)^version \d+: 16 shards, \d+ owned$`).Match(out) {
			t.Errorf("%s:\n%s", ln, out)
		}
	}
	// Ctrl-C in each terminal, one after the other, the last node first.
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		p.signal(t, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(timeout):
			t.Fatalf("%s did not stop after SIGTERM", p.name)
		}
		if p.waitErr != nil || len(p.out.events("stopped")) != 1 {
			t.Errorf("%s: exit %v, stopped lines %d", p.name, p.waitErr, len(p.out.events("stopped")))
		}
	}
}
