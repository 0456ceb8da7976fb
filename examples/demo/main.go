package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// logOutput receives holdfast's logs when -log is given.
var logOutput io.Writer = os.Stderr

func main() {
	switch err := run(os.Args[1:], os.Stdout); {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// options are the command line, parsed.
type options struct {
	nodes, shards int
	ttl, interval time.Duration
	timeout       time.Duration
	logger        *slog.Logger
}

// errUsage marks a command line that cannot run; usage was printed.
var errUsage = errors.New("usage")

func parseFlags(args []string, out io.Writer) (options, error) {
	var o options
	var level string
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.IntVar(&o.nodes, "nodes", 3, "number of nodes, `n` from 2 to 9 (3 of them raft voters; 1 of 2)")
	fs.IntVar(&o.shards, "shards", 16, "number of shards, `n` more than -nodes")
	fs.DurationVar(&o.ttl, "ttl", 2*time.Second, "session TTL: how long the cluster waits for a silent node before it moves its shards")
	fs.DurationVar(&o.interval, "interval", 100*time.Millisecond, "time between two writes of a shard's worker")
	fs.DurationVar(&o.timeout, "timeout", 90*time.Second, "give up if the demo has not finished by then")
	fs.StringVar(&level, "log", "", "show holdfast's logs at this `level` (debug, info, warn, error) on stderr")
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: go run ./examples/demo [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, errUsage
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.nodes < 2 || o.nodes > 9:
		err = fmt.Errorf("-nodes is %d; must be between 2 and 9", o.nodes)
	case o.shards <= o.nodes:
		err = fmt.Errorf("-shards is %d; must be more than -nodes (%d), so that every node owns one", o.shards, o.nodes)
	case o.ttl < minTTL():
		err = fmt.Errorf("-ttl is %v; must be at least %v (3 × the raft election timeout)", o.ttl, minTTL())
	case o.interval <= 0 || o.timeout <= 0:
		err = errors.New("-interval and -timeout must be positive")
	}
	if err == nil {
		o.logger, err = newLogger(level)
	}
	if err != nil {
		fmt.Fprintln(out, "demo:", err)
		fs.Usage()
		return o, errUsage
	}
	return o, nil
}

// minTTL is the shortest session TTL holdfast accepts with the local
// timing profile.
func minTTL() time.Duration {
	r := coordinator.DefaultLocalConfig().Raft
	return 3 * max(r.ElectionTimeout, r.HeartbeatTimeout)
}

// run is the whole demo: it returns nil after a clean run, errUsage for
// a bad command line, and another error if anything failed, including a
// stale write that the ledger accepted.
func run(args []string, out io.Writer) error {
	o, err := parseFlags(args, out)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "holdfast-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	d := &demo{o: o, p: newPrinter(out), start: time.Now()}
	defer d.p.flush() // what was said before an error, too
	d.intro()
	if d.nodes, err = startCluster(ctx, o, dir, filepath.Join(dir, "ledger.db")); err != nil {
		return err
	}
	defer closeAll(d.nodes)
	for _, step := range []func(context.Context) error{d.form, d.pause, d.move, d.resume, d.rejoin, d.finish} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}
