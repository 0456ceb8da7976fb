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

// quickStartTimeout bounds each wait on a quick-start node: listening,
// ready, and stopped after SIGTERM.
const quickStartTimeout = 3 * time.Minute

// TestREADMEQuickStart runs the README's quick start: the cert commands,
// three ledger nodes (the first one's listening line is the one the
// README shows, and the others join at its gossip address), holdfastctl
// with its defaults, then a graceful stop of each, one after the other.
func TestREADMEQuickStart(t *testing.T) {
	prose, blocks := quickStartBlocks(t)
	if len(blocks) != 3 || len(blocks[1]) != 3 {
		t.Fatalf("the quick start has %d shell blocks (%v); want certificates, three nodes, holdfastctl", len(blocks), blocks)
	}
	qs := newQuickStart(t, prose, blocks)
	for _, ln := range blocks[0] {
		if out, err := qs.sh(t, ln).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", ln, err, out)
		}
	}
	procs := qs.startNodes(t, blocks[1])
	qs.checkCtlDefault(t)
	qs.runCtlLines(t, blocks[2])
	stopInTurn(t, procs)
}

// quickStart is how TestREADMEQuickStart runs the README's lines: the
// binaries built once, the README's ports mapped to reserved ones, and the
// environment of every command.
type quickStart struct {
	prose       string            // the quick-start section's text
	ledger, ctl string            // the built binaries
	ports       map[string]string // README port → reserved port
	home        string            // the commands' HOME
	env         []string
}

// newQuickStart builds the binaries, reserves a port for each port the
// blocks name, and makes the commands' HOME.
func newQuickStart(t *testing.T, prose string, blocks [][]string) *quickStart {
	t.Helper()
	qs := &quickStart{prose: prose, ports: map[string]string{}}
	qs.ledger, qs.ctl = buildLedger(t), buildHoldfastctl(t)
	for _, block := range blocks {
		for _, ln := range block {
			for _, m := range loopbackPort.FindAllStringSubmatch(ln, -1) {
				if qs.ports[m[1]] == "" {
					// Reserved, not only free: no other test's cluster or
					// outgoing connection is given it while the node runs
					// and after it stops.
					qs.ports[m[1]] = strconv.Itoa(holdfasttest.ReservePort(t))
				}
			}
		}
	}
	qs.home = t.TempDir()
	qs.env = []string{"HOME=" + qs.home, "PATH=" + os.Getenv("PATH"), "HOLDFASTCTL_ADDR=127.0.0.1:" + qs.ports["8080"]}
	return qs
}

// withPorts rewrites s's loopback port numbers to the reserved ones.
func (qs *quickStart) withPorts(s string) string {
	return loopbackPort.ReplaceAllStringFunc(s, func(a string) string {
		if p, ok := qs.ports[strings.TrimPrefix(a, "127.0.0.1:")]; ok {
			return "127.0.0.1:" + p
		}
		return a
	})
}

// rewrite turns a README line into the command line run: the built binary
// for its go run prefix, the reserved ports for the README's.
func (qs *quickStart) rewrite(t *testing.T, ln string) string {
	t.Helper()
	for prog, bin := range map[string]string{"go run ./cmd/holdfastctl ": qs.ctl + " ", "go run ./examples/ledger ": qs.ledger + " "} {
		if strings.HasPrefix(ln, prog) {
			return bin + qs.withPorts(strings.TrimPrefix(ln, prog))
		}
	}
	t.Fatalf("quick-start line %q runs neither holdfastctl nor the ledger", ln)
	return ""
}

// sh returns the command that runs README line ln, rewritten, in the
// quick start's environment.
func (qs *quickStart) sh(t *testing.T, ln string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", "exec "+qs.rewrite(t, ln))
	cmd.Env = qs.env
	return cmd
}

// startNodes starts a node for each of the lines, checks n1's listening
// line against the README's and that the others join at its gossip
// address, and waits until every node is ready.
func (qs *quickStart) startNodes(t *testing.T, lines []string) []*proc {
	t.Helper()
	var procs []*proc
	for i, ln := range lines {
		p := startCmd(t, fmt.Sprintf("n%d", i+1), qs.sh(t, ln))
		procs = append(procs, p)
		ev := p.waitListening(t, quickStartTimeout)
		if i > 0 {
			continue
		}
		// The README's listening line, and the join address of the others.
		want := qs.withPorts(regexp.MustCompile("`(listening node=n1 [^`]*)`").FindStringSubmatch(qs.prose)[1])
		if !strings.Contains("\n"+p.out.tail(1000)+"\n", "\n"+want+"\n") {
			t.Errorf("n1 printed %q, the README shows %q", p.out.tail(5), want)
		}
		for _, other := range lines[1:] {
			if !strings.Contains(qs.withPorts(other), "-join "+ev.kv["gossip"]) {
				t.Errorf("%q does not join n1's gossip address %s", other, ev.kv["gossip"])
			}
		}
	}
	for _, p := range procs {
		p.waitReady(t, quickStartTimeout)
	}
	return procs
}

// checkCtlDefault checks that holdfastctl's own default is the address the
// README gives n1.
func (qs *quickStart) checkCtlDefault(t *testing.T) {
	t.Helper()
	help := exec.Command(qs.ctl, "-h")
	help.Env = []string{"HOME=" + qs.home}
	out, _ := help.CombinedOutput()
	if !strings.Contains(string(out), `(default "127.0.0.1:8080")`) || !strings.Contains(qs.prose, "`127.0.0.1:8080` is its default `-addr`") {
		t.Errorf("holdfastctl's default -addr is not the README's n1 -http:\n%s", out)
	}
}

// runCtlLines runs the README's holdfastctl lines and checks what status
// and shards print.
func (qs *quickStart) runCtlLines(t *testing.T, lines []string) {
	t.Helper()
	for _, ln := range lines {
		out, err := qs.sh(t, ln).CombinedOutput()
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
}

// stopInTurn stops the nodes as Ctrl-C in each terminal would, one after
// the other, the last node first, and checks each exits 0 with one stopped
// line.
func stopInTurn(t *testing.T, procs []*proc) {
	t.Helper()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		p.signal(t, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(quickStartTimeout):
			t.Fatalf("%s did not stop after SIGTERM", p.name)
		}
		if p.waitErr != nil || len(p.out.events("stopped")) != 1 {
			t.Errorf("%s: exit %v, stopped lines %d", p.name, p.waitErr, len(p.out.events("stopped")))
		}
	}
}
