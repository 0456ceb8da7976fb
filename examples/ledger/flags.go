package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// localBelow is the TTL under which the local timing profile is used.
const localBelow = 5 * time.Second

// options are the command line, parsed.
type options struct {
	node, db             string
	gossip, rpc, http    string
	advGossip, advRPC    string
	join                 []string
	dataDir              string
	expect, shards       int
	voters               int
	ttl, drain, interval time.Duration
	warmup               time.Duration
	prepare              bool
	checkBeforeWrite     bool
	allowRename          bool
	leaveOnTerminate     bool
	tokenFloor           uint64
	leaveCluster         string
	segmentSize          int64
	churn                time.Duration
	ownShards            bool
	tags, zone           string
	sec                  secOptions
}

// errUsage marks a command line that cannot be run: usage was printed.
var errUsage = errors.New("usage")

// parseFlags parses args; it prints usage to stderr and returns errUsage (or
// flag.ErrHelp for -h) when they are not a runnable command line.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	var join string
	fs := flag.NewFlagSet("ledger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.node, "node", "", "this node's `name`, unique in the cluster (required)")
	fs.StringVar(&o.db, "db", "", "`path` of the SQLite file every node shares (required)")
	fs.StringVar(&o.gossip, "gossip", "127.0.0.1:0", "gossip `host:port`")
	fs.StringVar(&o.rpc, "rpc", "127.0.0.1:0", "raft and RPC `host:port`")
	fs.StringVar(&o.advRPC, "advertise-rpc", "", "RPC `host:port` other nodes dial, when not -rpc's (a container, NAT); port 0: -rpc's port")
	fs.StringVar(&o.advGossip, "advertise-gossip", "", "gossip `ip:port` other nodes reach, when not -gossip's; port 0: -gossip's port")
	fs.StringVar(&o.http, "http", "127.0.0.1:0", "metrics and admin `host:port`")
	fs.StringVar(&join, "join", "", "gossip `addresses` of existing members, comma-separated")
	fs.StringVar(&o.dataDir, "data", "", "raft data `dir`; empty: a raft non-voter on in-memory stores")
	fs.BoolVar(&o.allowRename, "allow-rename", false, "start on a -data dir last used under another -node name, keeping its identity")
	fs.Uint64Var(&o.tokenFloor, "token-floor", 0, "when this node creates a new cluster, its tokens start above `N` (holdfastctl token-floor -sqlite FILE prints the database's highest) and above the clock in µs")
	fs.StringVar(&o.leaveCluster, "leave-cluster", "", "if the -data dir belongs to cluster `ID`, move its raft state aside and start as a new node (to join the -join seeds' cluster)")
	fs.IntVar(&o.expect, "expect", 0, "bootstrap a new cluster once `N` nodes with -data see each other; 0: join only")
	fs.IntVar(&o.voters, "voters", 3, "raft voters the cluster keeps: 1, 3 or 5")
	fs.IntVar(&o.shards, "shards", 16, "shard `count`, fixed when the cluster is created")
	fs.BoolVar(&o.ownShards, "own-shards", true, "own shards; false: this node never owns one (a voter or lease-only role)")
	fs.StringVar(&o.tags, "tags", "", "placement `tags` of this node, comma-separated (holdfastctl shards rule NAME FIRST-LAST:TAG gives those shards only to nodes with TAG)")
	fs.StringVar(&o.zone, "zone", "", "failure-domain `label` (gossiped; placement rules see it as the tag zone=LABEL)")
	fs.DurationVar(&o.ttl, "ttl", 10*time.Second, "session TTL; below 5s the local timing profile is used")
	fs.DurationVar(&o.drain, "drain", 0, "bound on a shard's drain at handoff; 0: 5s, or 1s when -ttl is below 5s")
	fs.DurationVar(&o.interval, "interval", 50*time.Millisecond, "time between appends to each owned shard")
	fs.DurationVar(&o.warmup, "shard-warmup", 0, "extra time loading a shard's state takes before its first write (stands for a large state)")
	fs.BoolVar(&o.prepare, "prepare", true, "warm a shard up on its next owner before a planned move (false: the next owner loads it after the grant)")
	fs.BoolVar(&o.checkBeforeWrite, "check-before-write", true, "check the lease inside each write transaction")
	fs.BoolVar(&o.leaveOnTerminate, "leave-on-terminate", false,
		"on SIGTERM or SIGINT, leave the cluster for good (a replacement voter promoted first; refused below -voters with none, then the node stops keeping its vote); default: stop keeping the vote, for a restart")
	fs.Int64Var(&o.segmentSize, "raft-segment-size", 0, "size of the raft log's segment files in `bytes` (0: 8 MiB; at least 64 KiB)")
	fs.DurationVar(&o.churn, "churn", 0, "acquire and release the named lease churn-NODE every `duration` (0: never): raft log traffic")
	o.sec.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ledger -node NAME -db PATH [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, errUsage // the flag package printed the error and usage
	}
	var missing []string
	if o.node == "" {
		missing = append(missing, "-node")
	}
	if o.db == "" {
		missing = append(missing, "-db")
	}
	switch {
	case len(missing) > 0:
		fmt.Fprintf(stderr, "ledger: %s required\n", strings.Join(missing, " and "))
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "ledger: unexpected argument %q\n", fs.Arg(0))
	default:
		o.join = splitList(join)
		var err error
		if o.sec, err = o.sec.resolve(o.node); err == nil {
			return o, nil
		}
		fmt.Fprintln(stderr, "ledger:", err)
		return o, errUsage
	}
	fs.Usage()
	return o, errUsage
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// validate checks what holdfast does not: the ledger's own settings.
// holdfast's New checks the rest and names the field.
func (o options) validate() error {
	if o.interval <= 0 {
		return fmt.Errorf("-interval is %v; must be positive", o.interval)
	}
	if o.drain < 0 {
		return fmt.Errorf("-drain is %v; must not be negative", o.drain)
	}
	if o.churn < 0 {
		return fmt.Errorf("-churn is %v; must not be negative", o.churn)
	}
	return nil
}

// clusterConfig returns the holdfast configuration for o, without Handler,
// Registerer and Logger. Timings come from DefaultConfig, or from
// DefaultLocalConfig when the TTL is short, and the lease margin and expiry
// grace scale with the TTL as the defaults do (TTL/10 and TTL/5).
func clusterConfig(o options) coordinator.Config {
	cfg := coordinator.DefaultConfig()
	if o.ttl < localBelow {
		cfg = coordinator.DefaultLocalConfig()
	}
	cfg.Insecure = o.sec.insecure // DefaultLocalConfig's Insecure must not leak into the ledger
	cfg.NodeName = o.node
	cfg.GossipAddr, cfg.RPCAddr = o.gossip, o.rpc
	cfg.AdvertiseGossipAddr, cfg.AdvertiseRPCAddr = o.advGossip, o.advRPC
	cfg.Join = o.join
	cfg.DataDir = o.dataDir
	cfg.AllowRename = o.allowRename
	cfg.Cluster.BootstrapExpect = o.expect
	cfg.Cluster.TokenFloor = o.tokenFloor
	cfg.Cluster.LeaveCluster = o.leaveCluster
	if o.voters != 0 {
		cfg.Cluster.Voters = o.voters
	}
	cfg.Shards.Count = o.shards
	cfg.Shards.NoShards = !o.ownShards
	if o.tags != "" {
		cfg.Shards.Tags = strings.Split(o.tags, ",")
	}
	cfg.Zone = o.zone
	cfg.Session.TTL = o.ttl
	cfg.Session.LeaseMargin = o.ttl / 10
	cfg.Session.ExpiryGrace = max(o.ttl/5, cfg.Raft.ElectionTimeout, cfg.Raft.HeartbeatTimeout)
	if o.drain > 0 {
		cfg.Shards.DrainTimeout = o.drain
	}
	if !o.prepare {
		cfg.Shards.PrepareTimeout = -1
	}
	cfg.Raft.LogSegmentSize = o.segmentSize
	return cfg
}

// logSettings logs the settings that decide the node's timing.
func logSettings(log *slog.Logger, o options, cfg coordinator.Config) {
	profile := "default"
	if cfg.Gossip.Profile == coordinator.GossipLocal {
		profile = "local"
	}
	log.Info("settings", "node", o.node, "db", o.db, "profile", profile,
		"voter_eligible", o.dataDir != "", "bootstrap_expect", o.expect, "voters", cfg.Cluster.Voters, "shards", o.shards,
		"session_ttl", cfg.Session.TTL, "lease_margin", cfg.Session.LeaseMargin, "expiry_grace", cfg.Session.ExpiryGrace,
		"drain", cfg.Shards.DrainTimeout, "raft_election_timeout", cfg.Raft.ElectionTimeout,
		"interval", o.interval, "shard_warmup", o.warmup, "prepare", o.prepare, "check_before_write", o.checkBeforeWrite, "leave_on_terminate", o.leaveOnTerminate,
		"tls", cfg.TLS != nil, "gossip_encrypted", len(cfg.Gossip.Keys) > 0, "http_tls", cfg.TLS != nil && o.sec.httpTLS)
}
