package coordinator

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/internal/session"
	"github.com/holdfast-go/holdfast/internal/wire"
)

var (
	// ErrShutdown is returned by calls made after Shutdown or Close began.
	ErrShutdown = wire.ErrShutdown
	// ErrNoLeader is returned when a write needs the raft leader and none is
	// known (an election is under way or quorum is lost).
	ErrNoLeader = wire.ErrNoLeader
	// ErrLeaveRefused is returned by Leave when the node may not leave the
	// raft configuration: too few voters would remain and no node can
	// replace it (without LeaveOptions.Force), the remaining healthy voters
	// could not commit its removal, or it is the last voter. The node is
	// left running.
	ErrLeaveRefused = wire.ErrLeaveRefused
	// ErrDuplicateName is returned by New when another live node already
	// uses this node's name.
	ErrDuplicateName = errors.New("holdfast: node name already in use")
	// ErrForeignCluster is returned by New when this node's data dir
	// belongs to another cluster than the one its Join seeds belong to (the
	// error names both, and Config.Cluster.LeaveCluster, which makes the
	// node leave its cluster). Nodes answer it, too, to calls and raft
	// traffic from nodes of another cluster.
	ErrForeignCluster = wire.ErrForeignCluster
	// ErrLeaseHeld is returned by TryAcquire when another node holds the
	// lease.
	ErrLeaseHeld = wire.ErrLeaseHeld
	// ErrLeaseLost is the cause of a lease's end when it ended for any reason
	// but Release: its session's belief lapsed, the session expired, or the
	// lease went to another holder. Lease.Checkpoint wraps it.
	ErrLeaseLost = wire.ErrLeaseLost
	// ErrLeaseExpiring is returned by Lease.Checkpoint when less than the
	// margin is left (see *ExpiringError for how much).
	ErrLeaseExpiring = errors.New("holdfast: lease about to expire")
	// ErrRevoked is the cause of a shard lease's end when this node handed
	// the shard off at the leader's request (rebalancing, Drain, Shutdown).
	ErrRevoked = wire.ErrRevoked
	// ErrReleased is the cause of a lease's end after Release.
	ErrReleased = wire.ErrReleased
	// ErrSessionExpired is the cause when this node's belief in its session
	// lapsed (no keepalive answered in time) or the leader expired it.
	ErrSessionExpired = session.ErrExpired
)

// ExpiringError is returned by Lease.Checkpoint when the time left is below
// the margin. It wraps ErrLeaseExpiring.
type ExpiringError struct {
	Remaining, Margin time.Duration
}

func (e *ExpiringError) Error() string {
	return fmt.Sprintf("%s: %v left, margin %v", ErrLeaseExpiring, e.Remaining, e.Margin)
}

// Is makes errors.Is(err, ErrLeaseExpiring) true.
func (e *ExpiringError) Is(target error) bool { return target == ErrLeaseExpiring }

// ConfigError is the error New returns for a bad Config: the field at
// fault, by its path in Config ("Session.TTL", "Join[1]"), and what is
// wrong with it. It wraps ErrInvalidConfig, and its text is
// "holdfast: invalid config: FIELD: MSG". An application that maps Config
// fields to its own flags or settings (as the ledger example maps them to
// its command-line flags) reads Field and Msg with errors.As.
type ConfigError struct {
	// Field is the field's path in Config.
	Field string
	// Msg says what is wrong with it, and often what to set instead.
	Msg string
}

func (e *ConfigError) Error() string { return ErrInvalidConfig.Error() + ": " + e.Field + ": " + e.Msg }

// Unwrap makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// checkAddrs checks the syntax of every address in c before anything
// binds or dials: GossipAddr and RPCAddr are HOST:PORT (gossip's host an
// IP address or empty, on a real network), the advertised addresses' ports are in range, and
// each Join entry names a host and, if it has one, a port in range.
func (c *Config) checkAddrs() error {
	// On real UDP and TCP, gossip binds to an IP; an in-memory network
	// (Config.Network) has host names of its own.
	if err := checkBind("GossipAddr", c.GossipAddr, "7946", c.Network == nil); err != nil {
		return err
	}
	if err := checkBind("RPCAddr", c.RPCAddr, "7947", false); err != nil {
		return err
	}
	for _, f := range []struct{ field, addr string }{
		{"AdvertiseRPCAddr", c.AdvertiseRPCAddr}, {"AdvertiseGossipAddr", c.AdvertiseGossipAddr},
	} {
		if f.addr == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(f.addr); err == nil {
			if msg := portProblem(port, true); msg != "" {
				return fieldErr(f.field, "%q: %s", f.addr, msg)
			}
		}
	}
	for i, seed := range c.Join {
		if msg := joinProblem(seed); msg != "" {
			return fieldErr(fmt.Sprintf("Join[%d]", i), "%q: %s", seed, msg)
		}
	}
	return nil
}

// checkBind checks a listen address: HOST:PORT, the port 0 (any free one)
// to 65535; ipOnly: the host an IP address or empty (every interface).
// example is the port the error suggests.
func checkBind(field, addr, example string, ipOnly bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fieldErr(field, "%q is not HOST:PORT (%s): give an address such as 127.0.0.1:%s (port 0: any free port)",
			addr, splitProblem(err), example)
	}
	if msg := portProblem(port, true); msg != "" {
		return fieldErr(field, "%q: %s", addr, msg)
	}
	if ipOnly && host != "" && net.ParseIP(host) == nil {
		return fieldErr(field, "%q: the host must be an IP address (gossip binds to an IP; a name such as localhost "+
			"would bind every interface): give 127.0.0.1:%s for loopback, or this machine's IP", addr, port)
	}
	return nil
}

// joinProblem says what is wrong with one Join entry, or "": an optional
// "name/" prefix, then HOST:PORT or a HOST alone (memberlist then dials
// this node's own gossip port there).
func joinProblem(seed string) string {
	hostPort := seed
	if i := strings.Index(seed, "/"); i > 0 {
		hostPort = seed[i+1:]
	}
	if strings.TrimSpace(hostPort) == "" {
		return "no address: a join address is a member's gossip HOST:PORT, as its listening line prints it"
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return "" // HOST alone: this node's gossip port there
		}
		return splitProblem(err) + ": a join address is a member's gossip HOST:PORT"
	}
	if host == "" {
		return "no host: a join address is a member's gossip HOST:PORT"
	}
	if msg := portProblem(port, false); msg != "" {
		return msg + ": a join address is a member's gossip HOST:PORT"
	}
	return ""
}

// portProblem says what is wrong with a port, or "": a number from 0
// (when zeroOK) or 1 to 65535.
func portProblem(port string, zeroOK bool) string {
	n, err := strconv.ParseUint(port, 10, 64)
	switch {
	case err != nil:
		return fmt.Sprintf("port %q is not a number", port)
	case n > 65535:
		return fmt.Sprintf("port %d is out of range (0 to 65535)", n)
	case n == 0 && !zeroOK:
		return "port 0 names no member"
	}
	return ""
}

// splitProblem is net.SplitHostPort's complaint without the address it
// repeats.
func splitProblem(err error) string {
	if ae, ok := err.(*net.AddrError); ok {
		return ae.Err
	}
	return err.Error()
}
