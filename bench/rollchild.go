package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// rollOptions are a rolling-restart child's settings (-child-opts
// "shards,warmup,interval,prepare,expect").
type rollOptions struct {
	shards           int
	warmup, interval time.Duration
	prepare          bool
	expect           int
}

func (o rollOptions) String() string {
	return fmt.Sprintf("%d,%s,%s,%t,%d", o.shards, o.warmup, o.interval, o.prepare, o.expect)
}

func parseRollOptions(s string) (rollOptions, error) {
	var o rollOptions
	f := strings.Split(s, ",")
	if len(f) != 5 {
		return o, fmt.Errorf("%w: -child-opts %q", errBadChild, s)
	}
	var err [5]error
	o.shards, err[0] = strconv.Atoi(f[0])
	o.warmup, err[1] = time.ParseDuration(f[1])
	o.interval, err[2] = time.ParseDuration(f[2])
	o.prepare, err[3] = strconv.ParseBool(f[3])
	o.expect, err[4] = strconv.Atoi(f[4])
	for _, e := range err {
		if e != nil {
			return o, fmt.Errorf("%w: -child-opts %q: %v", errBadChild, s, e)
		}
	}
	return o, nil
}

// span is what one grant of one shard wrote: its first and last write.
type span struct {
	first, last time.Time
	writes      int
}

type spanKey struct {
	shard coordinator.ShardID
	token uint64
}

// roller is a rolling-restart child's shard handler: each owned shard is
// written every interval (a write is recorded only while the lease's
// Checkpoint passes, as a fenced service would write); a shard's first
// write waits for its warm-up, which Prepare does ahead of a planned move.
type roller struct {
	o     rollOptions
	mu    sync.Mutex // held for a whole tick: HandOff waits for the write in progress
	live  map[*coordinator.ShardLease]bool
	spans map[spanKey]*span
	warm  map[coordinator.ShardID]bool
	// acquires that found the shard prepared, and those that did not
	warmN, coldN int
}

func (r *roller) write(l *coordinator.ShardLease) {
	if l.Checkpoint() != nil {
		return
	}
	now := time.Now()
	k := spanKey{l.Shard(), l.Token()}
	sp := r.spans[k]
	if sp == nil {
		sp = &span{first: now}
		r.spans[k] = sp
	}
	sp.last = now
	sp.writes++
}

func (r *roller) Prepare(ctx context.Context, s coordinator.ShardID, _ coordinator.Holder) error {
	if !sleepCtxErr(ctx, r.o.warmup) {
		return nil
	}
	r.mu.Lock()
	r.warm[s] = true
	r.mu.Unlock()
	context.AfterFunc(ctx, func() {
		if context.Cause(ctx) == coordinator.ErrMoveAbandoned {
			r.mu.Lock()
			delete(r.warm, s)
			r.mu.Unlock()
		}
	})
	return nil
}

func (r *roller) Serve(ctx context.Context, l *coordinator.ShardLease) {
	r.mu.Lock()
	warm := r.warm[l.Shard()]
	delete(r.warm, l.Shard())
	r.mu.Unlock()
	r.mu.Lock()
	if warm {
		r.warmN++
	} else {
		r.coldN++
	}
	r.mu.Unlock()
	if !warm && !sleepCtxErr(ctx, r.o.warmup) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.write(l)
	r.live[l] = true
}

func (r *roller) HandOff(_ context.Context, l *coordinator.ShardLease) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.live, l)
	return nil
}

// tick writes every live shard, until ctx ends.
func (r *roller) tick(ctx context.Context) {
	t := time.NewTicker(r.o.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		for l := range r.live {
			if l.Err() != nil {
				delete(r.live, l)
				continue
			}
			r.write(l)
		}
		r.mu.Unlock()
	}
}

// dump writes the spans to dir as lines "shard token first last writes"
// (unix nanoseconds).
func (r *roller) dump(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if os.Getenv("ROLL_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "acquires %s: %d prepared, %d cold\n", filepath.Base(path), r.warmN, r.coldN)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for k, sp := range r.spans {
		fmt.Fprintf(w, "%d %d %d %d %d\n", k.shard, k.token, sp.first.UnixNano(), sp.last.UnixNano(), sp.writes)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// childRolling runs node a.index of a rolling restart: READY once it is a
// member with a session; "balanced N" answers BALANCED yes/no; SIGTERM
// shuts it down gracefully (its shards handed off), "exit" closes it at
// once; either way it writes its spans to a.dir and exits.
func childRolling(a childArgs, optsArg string) error {
	o, err := parseRollOptions(optsArg)
	if err != nil {
		return err
	}
	cfg := rollConfig(a, o)
	r := &roller{o: o, live: map[*coordinator.ShardLease]bool{}, spans: map[spanKey]*span{}, warm: map[coordinator.ShardID]bool{}}
	cfg.Shards.Handler = r
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	c, err := coordinator.New(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.tick(ctx)
	fmt.Printf("ADDR %s %s\n", c.GossipAddr(), c.RPCAddr())
	if err := poll(120*time.Second, c.Ready); err != nil {
		c.Close()
		return err
	}
	fmt.Println("READY")
	cmds := stdinLines()
	spans := filepath.Join(a.dir, fmt.Sprintf("spans-%s-%d.txt", cfg.NodeName, os.Getpid()))
	for {
		select {
		case <-term:
			sctx, scancel := context.WithTimeout(context.Background(), 60*time.Second)
			err := c.Shutdown(sctx)
			scancel()
			if err != nil {
				fmt.Fprintln(os.Stderr, "shutdown:", err)
			}
			cancel()
			return r.dump(spans)
		case cmd, ok := <-cmds:
			if answerRollQuery(c, cmd) {
				continue
			}
			if ok && cmd != "exit" {
				continue
			}
			c.Close()
			cancel()
			return r.dump(spans)
		}
	}
}

// rollConfig is the configuration of rolling-restart node a.index (named
// rollN, its data under a.dir): three voters, o.expect to bootstrap,
// o.shards shards, prepare off unless o.prepare, errors-only logging,
// joining a.join and, on a restart, keeping the addresses in a.ports
// ("gossip,rpc"). The caller sets the shard handler.
func rollConfig(a childArgs, o rollOptions) coordinator.Config {
	cfg := benchConfig()
	cfg.NodeName = fmt.Sprintf("roll%d", a.index)
	cfg.DataDir = filepath.Join(a.dir, cfg.NodeName)
	cfg.Cluster.Voters, cfg.Cluster.BootstrapExpect = 3, o.expect
	cfg.Shards.Count = o.shards
	if !o.prepare {
		cfg.Shards.PrepareTimeout = -1
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if a.join != "" {
		cfg.Join = strings.Split(a.join, ",")
	}
	if a.ports != "" { // a restart keeps its addresses
		if g, rpc, ok := strings.Cut(a.ports, ","); ok {
			cfg.GossipAddr, cfg.RPCAddr = g, rpc
		}
	}
	return cfg
}

// stdinLines returns the lines of standard input, read in the background;
// the channel closes at the end of the input.
func stdinLines() <-chan string {
	cmds := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			cmds <- sc.Text()
		}
		close(cmds)
	}()
	return cmds
}

// answerRollQuery answers the parent's queries to a rolling-restart child:
// "balanced N" prints BALANCED yes or no (whether the shards are balanced
// among N members), "leader" prints LEADER and the raft leader's name. It
// reports whether cmd was one of them.
func answerRollQuery(c *coordinator.Coordinator, cmd string) bool {
	if n, found := strings.CutPrefix(cmd, "balanced "); found {
		k, _ := strconv.Atoi(n)
		ans := "yes"
		if balancedAmong(c, k)() != nil {
			ans = "no"
		}
		fmt.Println("BALANCED " + ans)
		return true
	}
	if cmd == "leader" {
		l, _ := c.RaftLeader()
		fmt.Println("LEADER " + l.Name)
		return true
	}
	return false
}
