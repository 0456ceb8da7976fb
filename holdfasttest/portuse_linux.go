package holdfasttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tcpStates names the states of /proc/net/tcp's "st" column.
var tcpStates = map[string]string{"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
	"05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}

// portUse describes the TCP sockets of this machine whose local port is
// port (from /proc/net/tcp and tcp6), with the process holding each where
// this user may see it: what a failed restart on a reserved port logs, to
// show who held the port.
func portUse(port int) string {
	hex := fmt.Sprintf(":%04X", port)
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 || !strings.HasSuffix(fs[1], hex) {
				continue
			}
			out = append(out, fmt.Sprintf("%s local %s remote %s %s uid %s %s", filepath.Base(f), fs[1], fs[2],
				tcpStates[fs[3]], fs[7], socketOwner(fs[9])))
		}
	}
	if len(out) == 0 {
		return "no TCP socket on that port now"
	}
	return strings.Join(out, "; ")
}

// socketOwner returns "pid N (command)" for the process with an open socket
// of that inode, or "pid unknown".
func socketOwner(inode string) string {
	want := "socket:[" + inode + "]"
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		if link, err := os.Readlink(fd); err == nil && link == want {
			pid := strings.Split(fd, "/")[2]
			comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm"))
			if _, err := strconv.Atoi(pid); err == nil {
				return fmt.Sprintf("pid %s (%s)", pid, strings.TrimSpace(string(comm)))
			}
		}
	}
	return "pid unknown"
}
