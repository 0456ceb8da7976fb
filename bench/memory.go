package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Workload 6 runs every node (holdfast) or member (etcd) in a child
// process of this binary (re-executed with -child), so that each one's
// VmRSS is its own. The parent drives the children over stdin/stdout, one
// line per message:
//
//	child → parent: "ADDR <gossip addr>" (holdfast), "READY", "MEM <json>"
//	parent → child: "measure", "exit"
const (
	memShards = 10_000
	memLeases = 100
	memSettle = 2 * time.Second // after loading, before measuring
)

// memStats is what a child reports.
type memStats struct {
	RSSKiB     int64  `json:"rss_kib"`    // VmRSS before the forced GC
	HWMKiB     int64  `json:"hwm_kib"`    // VmHWM: peak RSS
	HeapLive   uint64 `json:"heap_live"`  // HeapAlloc after a forced GC
	HeapInuse  uint64 `json:"heap_inuse"` // after the GC
	GoSys      uint64 `json:"go_sys"`     // memory the Go runtime obtained from the OS
	Goroutines int    `json:"goroutines"` // runtime.NumGoroutine
	Threads    int    `json:"threads"`    // Threads in /proc/PID/status
	JVM        bool   `json:"jvm"`        // a Java server: no Go heap or goroutines
}

// child is a running child process.
type child struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func spawn(args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := &child{cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			ch.lines <- sc.Text()
		}
		close(ch.lines)
	}()
	return ch, nil
}

// expect waits for the child's next line starting with prefix and returns
// the rest of it.
func (c *child) expect(prefix string, timeout time.Duration) (string, error) {
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				return "", fmt.Errorf("child exited while waiting for %q", prefix)
			}
			if rest, found := strings.CutPrefix(l, prefix); found {
				return strings.TrimSpace(rest), nil
			}
		case <-deadline:
			return "", fmt.Errorf("no %q from the child within %v", prefix, timeout)
		}
	}
}

func (c *child) send(msg string) error {
	_, err := fmt.Fprintln(c.in, msg)
	return err
}

func (c *child) measure() (memStats, error) {
	var m memStats
	if err := c.send("measure"); err != nil {
		return m, err
	}
	s, err := c.expect("MEM ", 30*time.Second)
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal([]byte(s), &m)
}

// stop asks the child to exit and waits for it (killing it after 20 s).
func (c *child) stop() {
	c.send("exit")
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

func stopAll(cs []*child) {
	for _, c := range cs {
		c.stop()
	}
}

// memoryWorkload measures workload 6 at one replica count for holdfast
// and every available peer, adding per-node values (the table shows their
// median) to sec.
func memoryWorkload(kinds []*peerKind, replicas int, sec *section) error {
	const title = "6. memory per node, 10,000 shards + 100 leases"
	t0 := time.Now()
	rss := sec.metric(title, "RSS (VmRSS)", "MiB", false)
	heap := sec.metric(title, "Go heap live after GC", "MiB", false)
	hf, err := memHoldfast(replicas)
	if err != nil {
		return fmt.Errorf("holdfast: %w", err)
	}
	notes := []string{recordMem(rss, heap, hfName, hf)}
	for _, k := range kinds {
		if k.available() != nil {
			continue
		}
		ms, err := k.memory(replicas)
		if err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
		notes = append(notes, recordMem(rss, heap, k.name, ms))
	}
	sec.note("Memory (r=%d), per node: %s.", replicas, strings.Join(notes, "; "))
	log.Printf("memory r=%d: done in %v", replicas, time.Since(t0).Round(time.Millisecond))
	return nil
}

// recordMem adds system's per-node figures to rss and heap (a JVM has no
// Go heap: its servers' heap is left out) and describes them.
func recordMem(rss, heap *metric, system string, ms []memStats) string {
	var r, h []float64
	for _, m := range ms {
		r = append(r, float64(m.RSSKiB)/1024)
		rss.add(system, r[len(r)-1])
		if !m.JVM {
			h = append(h, float64(m.HeapLive)/(1<<20))
			heap.add(system, h[len(h)-1])
		}
	}
	if len(h) == 0 {
		return fmt.Sprintf("%s RSS %s MiB (JVM, %s heap), threads %s", system, fmtList(r), zkHeap, threads(ms))
	}
	return fmt.Sprintf("%s RSS %s MiB, heap %s MiB, goroutines %s", system, fmtList(r), fmtList(h), goroutines(ms))
}

func threads(ms []memStats) string {
	var s []string
	for _, m := range ms {
		s = append(s, strconv.Itoa(m.Threads))
	}
	return strings.Join(s, ", ")
}

func goroutines(ms []memStats) string {
	var s []string
	for _, m := range ms {
		s = append(s, strconv.Itoa(m.Goroutines))
	}
	return strings.Join(s, ", ")
}

// memIdle measures an idle child of this binary: the floor under both
// systems' figures.
func memIdle() (memStats, error) {
	c, err := spawn("-child", "idle")
	if err != nil {
		return memStats{}, err
	}
	defer c.stop()
	if _, err := c.expect("READY", 30*time.Second); err != nil {
		return memStats{}, err
	}
	time.Sleep(memSettle)
	return c.measure()
}

// memHoldfast starts replicas holdfast voters, each in its own child, that
// own memShards shards between them and hold memLeases leases, and
// measures each.
func memHoldfast(replicas int) ([]memStats, error) {
	dir, err := os.MkdirTemp("", "holdfast-mem-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var cs []*child
	defer func() { stopAll(cs) }()
	join := ""
	for i := 0; i < replicas; i++ {
		c, err := spawn("-child", "holdfast", "-child-index", strconv.Itoa(i), "-child-n", strconv.Itoa(replicas),
			"-child-dir", dir, "-child-join", join)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
		addr, err := c.expect("ADDR ", 60*time.Second)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			join = addr
		}
	}
	for _, c := range cs {
		if _, err := c.expect("READY", 180*time.Second); err != nil {
			return nil, err
		}
	}
	time.Sleep(memSettle)
	return measureAll(cs)
}

func measureAll(cs []*child) ([]memStats, error) {
	var out []memStats
	for _, c := range cs {
		m, err := c.measure()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ",")
}

func splitInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

var errBadChild = errors.New("bad -child arguments")
