package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/internal/leaktest"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// processParallel is how many tests that call t.Parallel run at once
// unless -parallel says otherwise: the tests that run clusters of ledger
// processes (three to six each) call it. Such a test spends most of its
// time waiting on the processes' timers (elections, session TTLs, a
// paused holder's lease running out), not on the CPU, so three fit on a
// 2-core machine beside the package's other tests; go test's default
// would be GOMAXPROCS.
const processParallel = 3

// TestMain fails the run if any goroutine outlives the tests, and removes
// the binaries they built.
func TestMain(m *testing.M) {
	flag.Parse()
	testkit.DefaultParallel(processParallel)
	code := leaktest.Run(m, 10*time.Second)
	removeBuilt()
	os.Exit(code)
}

func TestCommandLine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ledger.db")
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "ca.pem"), nil, 0o600) // present: the node certificate is what is missing
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"no flags", nil, 2, "-node and -db required"},
		{"no db", []string{"-node", "n1"}, 2, "-db required"},
		{"unknown flag", []string{"-node", "n1", "-db", db, "-bogus"}, 2, "flag provided but not defined: -bogus"},
		{"argument", []string{"-node", "n1", "-db", db, "extra"}, 2, `unexpected argument "extra"`},
		{"help", []string{"-h"}, 0, "usage: ledger"},
		{"interval", []string{"-node", "n1", "-db", db, "-insecure", "-interval", "0s"}, 1, "-interval is 0s; must be positive"},
		{"ttl too short", []string{"-node", "n1", "-db", db, "-insecure", "-ttl", "500ms"}, 1,
			"ledger: -ttl is 500ms; must be at least 3 × the raft election/heartbeat timeout (900ms) so a leader change does not expire sessions\n"},
		{"expect without data", []string{"-node", "n1", "-db", db, "-insecure", "-expect", "3"}, 1, "ledger: -expect is 3 but -data is empty"},
		{"expect above voters", []string{"-node", "n1", "-db", db, "-insecure", "-data", t.TempDir(), "-expect", "5"}, 1,
			"ledger: -expect is 5, above -voters (3): the nodes that form a cluster all become voters; raise -voters (1, 3 or 5) to at least 5, or lower -expect\n"},
		{"gossip without port", []string{"-node", "n1", "-db", db, "-insecure", "-gossip", "localhost"}, 1,
			`ledger: -gossip: "localhost" is not HOST:PORT (missing port in address): give an address such as 127.0.0.1:7946 (port 0: any free port)` + "\n"},
		{"rpc port out of range", []string{"-node", "n1", "-db", db, "-insecure", "-rpc", "127.0.0.1:127947"}, 1,
			`ledger: -rpc: "127.0.0.1:127947": port 127947 is out of range (0 to 65535)` + "\n"},
		{"join port not a number", []string{"-node", "n1", "-db", db, "-insecure", "-join", "127.0.0.1:nope"}, 1,
			`ledger: -join: "127.0.0.1:nope": port "nope" is not a number: a join address is a member's gossip HOST:PORT` + "\n"},
		{"bad http", []string{"-node", "n1", "-db", db, "-insecure", "-http", "nowhere"}, 1, "-http:"},
		{"no certificates", []string{"-node", "n1", "-db", db}, 2, "holdfastctl cert create-ca            (writes ~/.holdfast/certs"},
		{"no certificates, long TTL", []string{"-node", "n1", "-db", db, "-ttl", "10s"}, 2, "or with -insecure to run without TLS"},
		{"insecure and certificates", []string{"-node", "n1", "-db", db, "-insecure", "-certs", "certs"}, 2, "choose one"},
		{"cert without key", []string{"-node", "n1", "-db", db, "-ca", "ca.pem", "-cert", "n1.pem"}, 2, "-ca, -cert and -key go together"},
		{"unspecified advertise", []string{"-node", "n1", "-db", db, "-insecure", "-advertise-rpc", "0.0.0.0:7947"}, 1, `ledger: -advertise-rpc: "0.0.0.0:7947" has an unspecified host`},
		{"advertised gossip name", []string{"-node", "n1", "-db", db, "-insecure", "-advertise-gossip", "n1.example:7946"}, 1, `ledger: -advertise-gossip: "n1.example:7946": the host must be an IP address`},
		{"missing certificate files", []string{"-node", "n1", "-db", db, "-certs", empty}, 1, "ledger: this node's certificate " +
			filepath.Join(empty, "n1.pem") + " (-certs " + empty + ") cannot be read: no such file or directory; " +
			"make it with holdfastctl cert create-node -dir " + empty + " -addr HOST n1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr does not contain %q:\n%s", tc.want, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: %q, want nothing", stdout.String())
			}
		})
	}
}

func TestClusterConfigTimings(t *testing.T) {
	for _, tc := range []struct {
		ttl, margin, grace, drain time.Duration
		gossip                    coordinator.GossipProfile
	}{
		{10 * time.Second, time.Second, 2 * time.Second, 5 * time.Second, coordinator.GossipLAN},
		{5 * time.Second, 500 * time.Millisecond, time.Second, 5 * time.Second, coordinator.GossipLAN},
		{2 * time.Second, 200 * time.Millisecond, 400 * time.Millisecond, time.Second, coordinator.GossipLocal},
		// TTL/5 is below the local election timeout: the grace is raised to it.
		{time.Second, 100 * time.Millisecond, 300 * time.Millisecond, time.Second, coordinator.GossipLocal},
	} {
		cfg := clusterConfig(options{node: "n1", ttl: tc.ttl, shards: 8})
		if cfg.Session.LeaseMargin != tc.margin || cfg.Session.ExpiryGrace != tc.grace || cfg.Shards.DrainTimeout != tc.drain || cfg.Gossip.Profile != tc.gossip {
			t.Errorf("ttl %v: margin %v grace %v drain %v gossip %v; want %v %v %v %v", tc.ttl,
				cfg.Session.LeaseMargin, cfg.Session.ExpiryGrace, cfg.Shards.DrainTimeout, cfg.Gossip.Profile, tc.margin, tc.grace, tc.drain, tc.gossip)
		}
	}
	if cfg := clusterConfig(options{node: "n1", ttl: 2 * time.Second, drain: 3 * time.Second}); cfg.Shards.DrainTimeout != 3*time.Second {
		t.Errorf("-drain 3s gives ShardDrainTimeout %v", cfg.Shards.DrainTimeout)
	}
}

// TestAuditFindsViolations feeds the auditor's scan a ledger with a gap in
// seq, a token that goes down, and a fence row that disagrees.
func TestAuditFindsViolations(t *testing.T) {
	ctx := context.Background()
	led, err := openLedger(ctx, filepath.Join(t.TempDir(), "ledger.db"), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer led.close()
	for s := range int64(3) {
		if err := led.initShard(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// Shard 0: three good appends under two tokens.
	for _, token := range []uint64{5, 5, 9} {
		if _, err := led.appendEntry(ctx, 0, token, nil); err != nil {
			t.Fatal(err)
		}
	}
	var st auditState
	r, err := st.scan(ctx, led.db)
	if err != nil || r.rows != 3 || r.violations != 0 {
		t.Fatalf("clean ledger: %+v, %v", r, err)
	}
	// A stale append is refused by the fence and leaves nothing behind.
	if _, err := led.appendEntry(ctx, 0, 7, nil); err == nil {
		t.Fatal("token 7 after token 9 was accepted")
	} else if fe, ok := asFenced(err); !ok || fe.Highest != 9 {
		t.Fatalf("token 7 after token 9: %v", err)
	}
	// Writes that bypass the fence: shard 1 skips seq 2 and goes back to
	// token 3; shard 2's fence row is left behind.
	for _, q := range []string{
		"INSERT INTO writes (shard, seq, token, node, at) VALUES (1, 1, 4, 'x', 0), (1, 3, 3, 'x', 0), (2, 1, 8, 'x', 0)",
		"UPDATE shards SET seq = 3, fence = 4 WHERE shard = 1",
	} {
		if _, err := led.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	r, err = st.scan(ctx, led.db)
	if err != nil {
		t.Fatal(err)
	}
	// seq 3 after 1; token 3 after 4; shard 1's fence 4 vs last token 3;
	// shard 2's row (seq 0, fence 0) vs its write.
	if r.rows != 3 || r.violations != 4 || !strings.Contains(r.problem, "shard 1: seq 3 follows seq 1") {
		t.Errorf("scan: %+v; want 3 rows, 4 violations, the first a seq gap in shard 1", r)
	}
}

// TestDataDirOfAnotherNode checks that the ledger refuses a -data dir last
// used under another -node name, naming the flag that allows it, and that
// -allow-rename sets Config.AllowRename.
func TestDataDirOfAnotherNode(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := coordinator.DefaultLocalConfig()
	cfg.NodeName, cfg.DataDir = "n1", data
	c, err := coordinator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"-node", "n2", "-db", filepath.Join(dir, "ledger.db"), "-data", data, "-ttl", "2s", "-insecure"}
	if code := run(args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "set -allow-rename to rename that node") {
		t.Errorf("exit status %d, want 1 and an error naming -allow-rename; stderr:\n%s", code, stderr.String())
	}
	for flagSet, want := range map[bool]bool{false: false, true: true} {
		a := []string{"-node", "n2", "-db", "x.db", "-insecure"}
		if flagSet {
			a = append(a, "-allow-rename")
		}
		o, err := parseFlags(a, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		if got := clusterConfig(o).AllowRename; got != want {
			t.Errorf("args %v: AllowRename %v, want %v", a, got, want)
		}
	}
}
