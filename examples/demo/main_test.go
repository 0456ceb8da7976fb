package main

import (
	"bytes"
	"errors"
	"flag"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/leaktest"
)

// TestMain fails the run if any goroutine outlives the tests: the demo
// must stop everything it started.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, 10*time.Second)
}

// TestDemo runs the whole story with a small cluster and checks the lines
// a reader relies on.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("forms a cluster and waits out a session TTL")
	}
	var out bytes.Buffer
	if err := run([]string{"-shards", "6", "-ttl", "1s"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	t.Log("\n" + text)
	for _, re := range []string{
		`(?m)^lease "auditor" held by node\d, token \d+$`,
		`(?m)^shard \d+: +node\d token \d+ +→ node\d token \d+ +after \d+\.\ds$`,
		`(?m)^node\d's write to shard \d+ with token \d+ rejected: shard fenced at \d+$`,
		`Checkpoint fails: holdfast: lease lost`,
		`(?m)^ledger\.db: \d+ writes accepted, [1-9]\d* stale writes rejected, 0 stale writes accepted$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("output has no line matching %s", re)
		}
	}
	for _, bad := range []string{"ACCEPTED", "still believes", "NOT before", "failed:"} {
		if strings.Contains(text, bad) {
			t.Errorf("output contains %q", bad)
		}
	}
	// Every frozen worker's write was rejected: as many rejections as
	// shards listed as frozen.
	frozen := regexp.MustCompile(`(?m)^  shard \d+ +token \d+ +lease valid`).FindAllString(text, -1)
	rejected := regexp.MustCompile(`(?m) rejected: shard fenced at `).FindAllString(text, -1)
	if len(frozen) == 0 || len(frozen) != len(rejected) {
		t.Errorf("%d workers frozen, %d writes rejected; want the same, at least 1", len(frozen), len(rejected))
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  error
		want string
	}{
		{[]string{"-help"}, flag.ErrHelp, "-nodes n"},
		{[]string{"-bogus"}, errUsage, "flag provided but not defined: -bogus"},
		{[]string{"-nodes", "1"}, errUsage, "-nodes is 1"},
		{[]string{"-shards", "3"}, errUsage, "-shards is 3; must be more than -nodes"},
		{[]string{"-ttl", "100ms"}, errUsage, "-ttl is 100ms"},
		{[]string{"-log", "loud"}, errUsage, "loud"},
		{[]string{"extra"}, errUsage, `unexpected argument "extra"`},
	} {
		var out bytes.Buffer
		err := run(tc.args, &out)
		if !errors.Is(err, tc.err) {
			t.Errorf("run(%q) = %v, want %v", tc.args, err, tc.err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("run(%q) printed %q, want it to contain %q", tc.args, out.String(), tc.want)
		}
	}
}
