package holdfasttest

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/holdfast-go/holdfast/internal/testkit"
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
	dir, err := portDir(os.TempDir())
	if err != nil {
		return 0, false, err
	}
	return pl.reserveIn(dir, lo, hi)
}

// portDirName is the directory under the temporary directory that holds one
// lock file per port, shared by every user of the machine.
const portDirName = "holdfasttest-ports"

// portDir returns the directory of the port lock files under base: the
// shared one, which its owner makes writable by every user with the sticky
// bit (as /tmp is), so that the users of one machine see each other's
// reservations; or, when it is not writable here (another user made it
// before it was shared: mode 0755), one of this user's own, whose
// reservations only this user's tests see.
func portDir(base string) (string, error) {
	dir := filepath.Join(base, portDirName)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", err
	}
	_ = os.Chmod(dir, 0o777|os.ModeSticky) // refused unless this user owns it (or is root)
	if unix.Access(dir, unix.W_OK|unix.X_OK) == nil {
		return dir, nil
	}
	own := testkit.OwnDir(dir)
	if err := os.MkdirAll(own, 0o700); err != nil {
		return "", err
	}
	if err := unix.Access(own, unix.W_OK|unix.X_OK); err != nil {
		return "", fmt.Errorf("neither %s nor %s is writable by this user: %w", dir, own, err)
	}
	return own, nil
}

// reserveIn reserves a port of [lo, hi) with its lock file in dir. A lock
// file is opened read-only (flock needs no more), so one that another user
// created serves this user too; one this user may not read is passed over.
func (pl *portLocks) reserveIn(dir string, lo, hi int) (port int, ok bool, err error) {
	for range 4 * (hi - lo) {
		p := lo + rand.IntN(hi-lo)
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDONLY|unix.O_NOFOLLOW, 0o444)
		if errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err != nil {
			return 0, false, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
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
