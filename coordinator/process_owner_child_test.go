//go:build linux

// The "owner" child process of TestSIGKILLOwnerShardsReowned and
// BenchmarkShardReownAfterSIGKILL (process_shard_test.go), and the parent's
// handle on it.

package coordinator_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// runOwnerChild is the "owner" child process: it joins the cluster as a
// raft non-voter with the shard count and TTL from its environment, prints
// "owned" and its shard IDs whenever the set of shards it owns changes, and
// runs until it is killed (5 minutes at most).
func runOwnerChild() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "child: "+format+"\n", args...)
		return 2
	}
	join := os.Getenv(childEnvJoin)
	shards, err := strconv.Atoi(os.Getenv(childEnvShards))
	if err != nil {
		return fail("%s: %v", childEnvShards, err)
	}
	ttl, err := time.ParseDuration(os.Getenv(childEnvTTL))
	if err != nil {
		return fail("%s: %v", childEnvTTL, err)
	}
	name := os.Getenv(childEnvName)
	if name == "" {
		name = "child"
	}

	// The parent kills the child; this bounds it even if the parent cannot.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The handler only wakes the loop below when a lease begins or ends.
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	cfg := coordinator.DefaultLocalConfig()
	ownerTimings(&cfg, shards, ttl)
	cfg.Shards.Handler = coordinator.HandlerFuncs{ServeFunc: func(ctx context.Context, l *coordinator.ShardLease) {
		poke()
		context.AfterFunc(ctx, poke)
	}}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c, stop, err := startChildNonVoter(cfg, name, join)
	if err != nil {
		return fail("coordinator.New: %v", err)
	}
	defer stop()

	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		var b strings.Builder
		b.WriteString("owned")
		for _, l := range c.Owned() {
			fmt.Fprintf(&b, " %d", l.Shard())
		}
		if line := b.String(); line != last {
			fmt.Fprintln(os.Stdout, line)
			last = line
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return fail("not killed within 5 minutes")
		}
	}
}

// ownerChild is a running "owner" child process.
type ownerChild struct{ *childProc }

// startOwnerChild starts an owner child named name that joins join; it is
// killed and reaped at the latest when tb's cleanup runs.
func startOwnerChild(tb testing.TB, join, name string, shards int, ttl time.Duration) *ownerChild {
	tb.Helper()
	return &ownerChild{startChild(tb, name,
		childEnvRole+"=owner",
		childEnvJoin+"="+join,
		childEnvShards+"="+strconv.Itoa(shards),
		childEnvTTL+"="+ttl.String(),
		childEnvName+"="+name,
	)}
}

// owned returns the shard set the child printed last.
func (ch *ownerChild) owned() ([]coordinator.ShardID, bool) {
	lines := ch.out.Lines()
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) == 0 || f[0] != "owned" {
			continue
		}
		var ids []coordinator.ShardID
		for _, s := range f[1:] {
			n, err := strconv.Atoi(s)
			if err != nil {
				return nil, false
			}
			ids = append(ids, coordinator.ShardID(n))
		}
		return ids, true
	}
	return nil, false
}
