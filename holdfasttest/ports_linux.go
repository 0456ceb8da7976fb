package holdfasttest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// portLocks holds the ports a loopback cluster reserved: one locked file
// per port, so that no other cluster, in this process or another, picks
// the same port while a node that owns it is down between a Kill and a
// Start.
type portLocks struct{ files []*os.File }

// reserve returns a loopback port below the kernel's ephemeral range, free
// for TCP and UDP now and locked for this cluster until release. Below
// that range no listener on port 0 and no outgoing connection is ever
// handed the port, so a node restarted on it finds it free (an ephemeral
// port that a node bound first and then closed in a crash can be taken by
// any connection of the parallel tests meanwhile: CI saw "address already
// in use" on a restart). ok is false where there is no such range (the
// caller keeps port 0).
func (pl *portLocks) reserve() (port int, ok bool, err error) {
	lo, hi, ok := belowEphemeral()
	if !ok {
		return 0, false, nil
	}
	dir := filepath.Join(os.TempDir(), "holdfasttest-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, false, err
	}
	for range 4 * (hi - lo) {
		p := lo + rand.IntN(hi-lo)
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return 0, false, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue
			}
			return 0, false, fmt.Errorf("locking port file: %w", err)
		}
		if !freeOnLoopback(p) {
			f.Close() // closing drops the lock
			continue
		}
		pl.files = append(pl.files, f)
		return p, true, nil
	}
	return 0, false, errors.New("no free loopback port below the ephemeral range")
}

// release unlocks every port reserved.
func (pl *portLocks) release() {
	for _, f := range pl.files {
		f.Close()
	}
	pl.files = nil
}

// freeOnLoopback reports whether port p can be bound on 127.0.0.1 for both
// TCP and UDP (gossip uses both).
func freeOnLoopback(p int) bool {
	addr := "127.0.0.1:" + strconv.Itoa(p)
	tl, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer tl.Close()
	ul, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	ul.Close()
	return true
}

// belowEphemeral returns up to 10,000 ports just below the kernel's
// ephemeral range, [lo, hi), or ok false when that range starts too low.
func belowEphemeral() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0, 0, false
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil || start < 2048 {
		return 0, 0, false
	}
	hi = start
	lo = max(1024, start-10_000)
	return lo, hi, true
}
