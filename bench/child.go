package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"go.etcd.io/etcd/server/v3/embed"
)

// childArgs are the -child-* flags.
type childArgs struct {
	kind  string // "holdfast", "etcd" or "idle"
	index int
	n     int
	dir   string
	join  string
	ports string
	opts  string // -child-opts (rolling)
}

// runChild runs this process as one node of workload 6 and returns when
// the parent says "exit".
func runChild(a childArgs) error {
	switch a.kind {
	case "idle":
		fmt.Println("READY")
		return serveChild(nil)
	case "holdfast":
		return childHoldfast(a)
	case "etcd":
		return childEtcd(a)
	case "rolling":
		return childRolling(a, a.opts)
	}
	return fmt.Errorf("%w: -child %q", errBadChild, a.kind)
}

// serveChild answers "measure" until "exit" (or end of input), then calls
// stop.
func serveChild(stop func()) error {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "measure":
			b, _ := json.Marshal(readMem())
			fmt.Printf("MEM %s\n", b)
		case "exit":
			if stop != nil {
				stop()
			}
			return nil
		}
	}
	if stop != nil {
		stop()
	}
	return sc.Err()
}

// readMem reads VmRSS and VmHWM first, then forces a GC and reads the
// live heap.
func readMem() memStats {
	m := procStatus("self")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.HeapLive, m.HeapInuse, m.GoSys = ms.HeapAlloc, ms.HeapInuse, ms.Sys
	m.Goroutines = runtime.NumGoroutine()
	return m
}

// procStatus reads VmRSS, VmHWM and Threads of process pid ("self" or a
// number) from /proc/PID/status.
func procStatus(pid string) memStats {
	var m memStats
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.RSSKiB = v
		case "VmHWM:":
			m.HWMKiB = v
		case "Threads:":
			m.Threads = int(v)
		}
	}
	return m
}

// childHoldfast runs voter a.index of a.n: it waits until the memShards
// shards are owned and balanced, takes its share of the memLeases leases
// (lease j is held by node j mod n) and waits until every lease is held.
func childHoldfast(a childArgs) error {
	cfg := benchConfig()
	cfg.NodeName = fmt.Sprintf("mem%d", a.index)
	cfg.DataDir = filepath.Join(a.dir, cfg.NodeName)
	cfg.Cluster.Voters, cfg.Cluster.BootstrapExpect = a.n, a.n
	cfg.Shards.Count = memShards
	cfg.Logger = slog.New(slog.DiscardHandler)
	if a.join != "" {
		cfg.Join = []string{a.join}
	}
	c, err := coordinator.New(cfg)
	if err != nil {
		return err
	}
	fmt.Printf("ADDR %s\n", c.GossipAddr())
	if err := poll(120*time.Second, c.Ready); err != nil {
		c.Close()
		return err
	}
	if err := poll(120*time.Second, balancedAmong(c, a.n)); err != nil {
		c.Close()
		return err
	}
	// Hold this node's leases as a service would: campaign again whenever
	// one ends (a session lost under load ends them all).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for j := a.index; j < memLeases; j += a.n {
		go holdLease(ctx, c, fmt.Sprintf("lease-%03d", j))
	}
	if err := poll(120*time.Second, func() error {
		if n := len(c.Leases()); n < memLeases {
			return fmt.Errorf("%w: %d leases held", errNotYet, n)
		}
		return nil
	}); err != nil {
		c.Close()
		return err
	}
	fmt.Println("READY")
	return serveChild(func() { cancel(); c.Close() })
}

// holdLease keeps name held by c until ctx ends.
func holdLease(ctx context.Context, c *coordinator.Coordinator, name string) {
	for ctx.Err() == nil {
		l, err := c.Acquire(ctx, name)
		if err != nil {
			if !sleepCtxErr(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		select {
		case <-l.Done():
		case <-ctx.Done():
			return
		}
	}
}

// sleepCtxErr sleeps d unless ctx ends first; it reports whether it slept.
func sleepCtxErr(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// balancedAmong reports nil once c's replica shows every shard owned by
// one of n nodes, none being handed off, and each node within its bounds.
func balancedAmong(c *coordinator.Coordinator, n int) func() error {
	return func() error {
		t := c.Table()
		loads := map[string]int{}
		for s := 0; s < t.Len(); s++ {
			info, _ := t.Shard(coordinator.ShardID(s))
			if info.State != coordinator.ShardOwned {
				return fmt.Errorf("%w: shard %d is %s", errNotYet, s, info.State)
			}
			loads[info.Owner.Node.ID]++
		}
		if t.Len() == 0 || len(loads) != n {
			return fmt.Errorf("%w: %d owners", errNotYet, len(loads))
		}
		lo, hi := bounds(t.Len(), n)
		for id, l := range loads {
			if l < lo || l > hi {
				return fmt.Errorf("%w: %s owns %d, bounds [%d, %d]", errNotYet, id, l, lo, hi)
			}
		}
		return nil
	}
}

// bounds are shardown's per-node bounds for equal weights and ε = 0.05.
func bounds(shards, n int) (lo, hi int) {
	q := float64(shards) / float64(n)
	return int(math.Floor(q*0.95 + 1e-9)), int(math.Ceil(q*1.05 - 1e-9))
}

// childEtcd runs member a.index of a.n; -child-ports lists the n peer
// ports then the n client ports.
func childEtcd(a childArgs) error {
	ports, err := splitInts(a.ports)
	if err != nil || len(ports) != 2*a.n {
		return fmt.Errorf("%w: -child-ports %q", errBadChild, a.ports)
	}
	m, err := embed.StartEtcd(etcdMemberConfig(a.dir, a.index, ports[:a.n], ports[a.n:]))
	if err != nil {
		return err
	}
	select {
	case <-m.Server.ReadyNotify():
	case err := <-m.Err():
		m.Close()
		return err
	case <-time.After(60 * time.Second):
		m.Close()
		return fmt.Errorf("etcd member %d not ready", a.index)
	}
	fmt.Println("READY")
	return serveChild(m.Close)
}
