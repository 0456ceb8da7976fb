package main

import (
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// peer is one system holdfast is compared with, its servers running at one
// replica count for every side by side workload (1 to 5). Each system has
// one implementation (etcdpeer.go, zkpeer.go); the rounds, the timing and
// the tables are shared (compare.go, leases.go, failover.go).
type peer interface {
	// acquireRelease runs clients contenders, each with its own client and
	// session (opened before the loop), locking and unlocking key until d
	// has passed.
	acquireRelease(clients int, d time.Duration, key string) (opsResult, error)
	// failover measures one kill of key's holder, a client of its own whose
	// session then expires on the servers, until the queued waiter holds it.
	failover(key string) (time.Duration, error)
	// handoffs measures n graceful handoffs of key between two sessions.
	handoffs(n int, key string) (latencies, error)
	// loadShards stores one record per shard holding its owner's fields as
	// c's table shows them.
	loadShards(c *coordinator.Coordinator, shards int) error
	// lookup returns the mean time of one read of a shard's record over at
	// least d, one read at a time, and each read's latency. A fresh read
	// sees every write committed before it began; the other is the
	// answering server's local copy.
	lookup(shards int, d time.Duration, fresh bool) (float64, latencies, error)
	close()
}

// peerKind is one system's entry: how to start its servers for workloads
// 1 to 5, and workload 6, which starts servers of its own (one process
// each) and measures them.
type peerKind struct {
	name    string // its column in the tables
	members string // what its replicas are called, in a section title
	jvm     bool   // its servers are JVMs: no Go heap to compare
	flag    string // its -peers value
	// fresh and local say what the two lookup rows read on this system.
	fresh, local string
	// available reports why the system cannot run on this machine (its
	// rows are then skipped with that message), or nil.
	available func() error
	start     func(replicas int) (peer, error)
	memory    func(replicas int) ([]memStats, error)
}

// peerKinds are the systems the bench can compare holdfast with, in the
// order of their columns.
var peerKinds = []peerKind{
	{name: "etcd", members: "etcd member(s)", flag: "etcd", fresh: "Get (linearizable)", local: "Get (serializable)",
		available: func() error { return nil },
		start:     func(r int) (peer, error) { return startEtcd(r, 60*time.Second) }, memory: memEtcd},
	{name: "ZooKeeper", members: "ZooKeeper server(s)", flag: "zookeeper", jvm: true, fresh: "sync + getData", local: "getData",
		available: zkAvailable,
		start:     func(r int) (peer, error) { return startZK(r, 90*time.Second) }, memory: memZK},
}

// parsePeers returns the peer kinds named by -peers (comma-separated
// flags).
func parsePeers(list string) ([]*peerKind, error) {
	var out []*peerKind
	for _, f := range strings.Split(list, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		i := slices.IndexFunc(peerKinds, func(k peerKind) bool { return k.flag == f })
		if i < 0 {
			return nil, fmt.Errorf("unknown peer %q: %s", f, strings.Join(peerFlags(), ", "))
		}
		out = append(out, &peerKinds[i])
	}
	return out, nil
}

func peerFlags() []string {
	var fs []string
	for _, k := range peerKinds {
		fs = append(fs, k.flag)
	}
	return fs
}

// peerNames returns the column titles of kinds.
func peerNames(kinds []*peerKind) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, k.name)
	}
	return out
}

// runningPeer is a peer whose servers are up.
type runningPeer struct {
	kind *peerKind
	p    peer
}

// startPeers starts every available kind at replicas (the others are
// noted by notePeers; their columns stay empty).
func startPeers(kinds []*peerKind, replicas int) ([]runningPeer, error) {
	var out []runningPeer
	for _, k := range kinds {
		if k.available() != nil {
			continue
		}
		p, err := k.start(replicas)
		if err != nil {
			closePeers(out)
			return nil, fmt.Errorf("%s: %w", k.name, err)
		}
		out = append(out, runningPeer{kind: k, p: p})
	}
	return out, nil
}

// notePeers notes in sec each kind that cannot run on this machine.
func notePeers(kinds []*peerKind, sec *section) {
	for _, k := range kinds {
		if err := k.available(); err != nil {
			sec.note("%s rows skipped: %v.", k.name, err)
			log.Printf("%s rows skipped: %v", k.name, err)
		}
	}
}

func closePeers(ps []runningPeer) {
	for _, p := range ps {
		p.p.close()
	}
}

// side is one system's round of an A/B workload.
type side struct {
	system string
	run    func(round int) error
}

// ab runs rounds A/B: holdfast, then each peer, then holdfast again, ...
// A round that fails (on a loaded machine a 2 s session can expire) is run
// again, at most twice per round, and noted under the table.
func ab(sec *section, what string, rounds int, sides []side) error {
	for r := 0; r < rounds; r++ {
		for _, s := range sides {
			if err := retryRound(sec, what, s.system, r, s.run); err != nil {
				return err
			}
		}
	}
	return nil
}

func retryRound(sec *section, what, system string, r int, f func(round int) error) error {
	var err error
	for try := 0; try < 3; try++ {
		if err = f(r); err == nil {
			return nil
		}
		sec.note("Note: %s, %s round %d failed and was run again: %v.", what, system, r, err)
		log.Printf("%s: %s round %d failed (try %d): %v", what, system, r, try+1, err)
	}
	return fmt.Errorf("%s round %d: %w", system, r, err)
}

// peerKey is the key (etcd) or path (ZooKeeper) of a workload's name.
func peerKey(name string) string { return "/holdfast-bench/" + name }
