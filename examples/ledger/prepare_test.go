package main

import (
	"strconv"
	"testing"
	"time"
)

// TestPreparedMoveWarmsUp: with -shard-warmup, SIGTERM of a voter hands
// each of its shards to a node that loaded it first (prepared, then
// loaded prepared=true), the old owner's drain names the next owner
// (forwarding), and the ledger stays clean: no refused write, no gap in
// seq, tokens never decrease.
func TestPreparedMoveWarmsUp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ledger processes")
	}
	t.Parallel()
	lc := newLedgerCluster(t, insecure)
	names := []string{"n1", "n2", "n3"}
	warm := []string{"-shard-warmup", "100ms"}
	startVoters(t, lc, names, map[string][]string{"n1": warm, "n2": warm, "n3": warm})
	leader := lc.waitLeaderAmong(t, 30*time.Second, names...)
	lc.waitSteady(t, names...)
	rest := without(names, leader)
	victim, third := rest[0], rest[1]
	lc.observeFrom(t, third)
	list, err := lc.procs[third].shards()
	if err != nil {
		t.Fatal(err)
	}
	moved := ownedBy(list, victim)
	lc.terminate(t, victim)
	lc.waitSteady(t, leader, third)
	forwarded := map[string]string{}
	for _, e := range lc.procs[victim].out.events("forwarding") {
		forwarded[e.kv["shard"]] = e.kv["to"]
	}
	for s := range moved {
		shard := strconv.FormatUint(uint64(s), 10)
		to := forwarded[shard]
		if to != leader && to != third {
			t.Errorf("shard %s: the drain named next owner %q, want %s or %s", shard, to, leader, third)
			continue
		}
		p := lc.procs[to].out
		if !p.has("prepared", map[string]string{"shard": shard}) || !p.has("loaded", map[string]string{"shard": shard, "prepared": "true"}) {
			t.Errorf("shard %s went to %s without a prepare: %s", shard, to, p.tail(20))
		}
	}
	if r := lc.rejectedBy(t); len(r) > 0 {
		t.Errorf("writes refused by the fence: %v", r)
	}
	lc.checkLedger(t)
}
