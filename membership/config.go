package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

// Profile selects memberlist's timing defaults.
type Profile int

const (
	// LAN uses memberlist.DefaultLANConfig: for production in one data centre.
	LAN Profile = iota
	// Local uses memberlist.DefaultLocalConfig: fast failure detection on
	// loopback, for tests and demos.
	Local
)

// String returns the lower-case name of the profile.
func (p Profile) String() string {
	switch p {
	case LAN:
		return "lan"
	case Local:
		return "local"
	}
	return "Profile(" + strconv.Itoa(int(p)) + ")"
}

// DefaultReapAfter is how long a Failed or Left member stays in Members when
// Config.ReapAfter is zero.
const DefaultReapAfter = 24 * time.Hour

// Config configures a Membership. It is taken by value and never modified.
type Config struct {
	// NodeName is the node's unique name in the pool. Required.
	NodeName string
	// BindAddr is the gossip listen address, "host:port"; port 0 picks a
	// free port (see Membership.Addr). Required unless Transport is set.
	BindAddr string
	// AdvertiseAddr is the "host:port" other nodes use to reach this one;
	// empty means the bound address, and port 0 the bound port. Ignored
	// when Transport is set.
	AdvertiseAddr string
	// Profile selects memberlist's timings; the zero value is LAN.
	Profile Profile
	// Meta is the initial metadata gossiped by this node.
	Meta Meta
	// Transport, if set, replaces memberlist's UDP/TCP transport (e.g. an
	// in-memory network for tests); addresses then come from it.
	Transport memberlist.NodeAwareTransport
	// Accept, if set, is called for remote nodes seen on a join merge and
	// in alive/update messages. An error refuses the node: it is not added
	// (a join merge that contains it is cancelled) or its update is ignored,
	// and the reason is logged. It is called from gossip goroutines while
	// memberlist holds its locks, so it must be fast and must not call Join,
	// SetMeta, Leave or Shutdown. It may be called many times for one node.
	Accept func(Member) error
	// ReapAfter is how long a Failed or Left member stays in Members before
	// it is forgotten (without an event); zero means DefaultReapAfter.
	ReapAfter time.Duration
	// Keys, if set, encrypt and authenticate all gossip (UDP and TCP) with
	// AES-GCM: each key is 16, 24 or 32 bytes (AES-128, -192, -256), with no
	// duplicates. The first is the primary key, used to encrypt; all are
	// tried to decrypt. Messages that are not encrypted with one of them are
	// dropped, and nothing is sent in clear text. Empty: gossip is neither
	// encrypted nor authenticated. The keys are copied; change them at run
	// time with InstallKey, UseKey and RemoveKey.
	Keys [][]byte
	// LookupHost resolves the host name of a Join seed to its addresses,
	// each of which Join contacts; nil means net.DefaultResolver.LookupHost.
	// It has the signature of net.Resolver.LookupHost, so a resolver with
	// its own settings can be passed as (&net.Resolver{...}).LookupHost;
	// tests pass a fixed table. Seeds that are IP addresses are not looked
	// up.
	LookupHost func(ctx context.Context, host string) (addrs []string, err error)
	// ReconnectInterval is how often the node tries to re-join one member it
	// knows as Failed (round robin), so that both sides of a healed
	// partition see each other alive again within a few intervals instead
	// of never. Zero means DefaultReconnectIntervalLocal for the Local
	// profile and DefaultReconnectIntervalLAN for LAN; negative disables.
	ReconnectInterval time.Duration
	// Compress turns on memberlist's LZW compression of every gossip
	// message and push/pull exchange. Off by default: a member's entry is a
	// few hundred bytes, and memberlist allocates a fresh 64 KiB compressor
	// table for every packet it compresses, which cost a quarter of the CPU
	// of a 192-node cluster's formation in one process. Either setting reads
	// the other's messages, so nodes with and without it mix in one pool.
	Compress bool
	// Logger receives this package's logs and memberlist's; nil discards.
	Logger *slog.Logger
}

// validate checks c and returns an error naming the faulty field.
func (c *Config) validate() error {
	if c.NodeName == "" {
		return errors.New("membership: Config.NodeName is required")
	}
	if c.Transport == nil {
		if c.BindAddr == "" {
			return errors.New("membership: Config.BindAddr is required when Config.Transport is nil")
		}
		if _, _, err := splitHostPort(c.BindAddr); err != nil {
			return fmt.Errorf("membership: Config.BindAddr: %w", err)
		}
		if c.AdvertiseAddr != "" {
			if _, _, err := splitHostPort(c.AdvertiseAddr); err != nil {
				return fmt.Errorf("membership: Config.AdvertiseAddr: %w", err)
			}
		}
	}
	if c.Profile != LAN && c.Profile != Local {
		return fmt.Errorf("membership: Config.Profile: unknown profile %d", int(c.Profile))
	}
	if c.ReapAfter < 0 {
		return fmt.Errorf("membership: Config.ReapAfter: must not be negative, got %v", c.ReapAfter)
	}
	if _, err := c.Meta.Encode(); err != nil {
		return fmt.Errorf("membership: Config.Meta: %w", err)
	}
	return validateKeys(c.Keys)
}

// splitHostPort parses "host:port" with a numeric port.
func splitHostPort(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("invalid port %q", portStr)
	}
	return host, int(port), nil
}

// memberlistConfig builds memberlist's configuration for m; d supplies the
// delegates. A non-nil keyring turns on encryption of all gossip, with
// incoming and outgoing verification.
func memberlistConfig(c *Config, d *delegate, keyring *memberlist.Keyring, logger *slog.Logger) *memberlist.Config {
	var mc *memberlist.Config
	if c.Profile == Local {
		mc = memberlist.DefaultLocalConfig()
	} else {
		mc = memberlist.DefaultLANConfig()
	}
	mc.Name = c.NodeName
	if c.Transport != nil {
		mc.Transport = c.Transport
	} else {
		// Validated already.
		mc.BindAddr, mc.BindPort, _ = splitHostPort(c.BindAddr)
		mc.AdvertiseAddr, mc.AdvertisePort = "", 0
		if c.AdvertiseAddr != "" {
			mc.AdvertiseAddr, mc.AdvertisePort, _ = splitHostPort(c.AdvertiseAddr)
			if mc.AdvertisePort == 0 {
				mc.AdvertisePort = mc.BindPort // memberlist sets it itself when BindPort is 0 too
			}
		}
	}
	// A name whose holder gossip declared dead may be taken at once by a
	// node at another address (a voter restarted in a container with a new
	// IP), as admit allows; memberlist's default (zero) refuses it until the
	// dead entry is reaped after GossipToTheDeadTime, and a join refused in
	// that time is only retried by the next push/pull. The address is no
	// identity: raft admission checks the node's certificate.
	mc.DeadNodeReclaimTime = time.Nanosecond
	mc.EnableCompression = c.Compress
	mc.SecretKey = nil
	mc.Keyring = keyring
	mc.GossipVerifyIncoming = true
	mc.GossipVerifyOutgoing = true
	mc.Delegate = d
	mc.Events = d
	mc.Alive = d
	mc.Merge = d
	mc.Conflict = d
	mc.LogOutput = nil
	mc.Logger = newStdLogger(logger.With(slog.String("component", "memberlist")))
	return mc
}
