//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/holdfast-go/holdfast/admin"
)

// testOperatorMove: an operator's shards move (POST /v1/shards/move on
// n1) hands one of n3's shards to n1 with a larger token; the old owner's
// writes stop before the new owner's first (no stale write accepted after
// it, none refused needed), and writing resumes under the new token.
func testOperatorMove(t *testing.T, lc *ledgerCluster) {
	list := lc.waitSteady(t, "n1", "n3", "n4")
	from := ownedBy(list, "n3")
	if len(from) == 0 {
		t.Fatal("n3 owns no shard")
	}
	shard := sortedKeys(from)[0]
	old := from[shard]
	body, err := json.Marshal(admin.PinShardRequest{Confirmation: admin.Confirmation{Confirm: "n1"}, Shard: shard, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := lc.observer.httpc().Post("http://"+lc.observer.http+"/v1/shards/move", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/shards/move: %s: %s", resp.Status, answer)
	}
	var res admin.OperationResult
	if err := json.Unmarshal(answer, &res); err != nil {
		t.Fatal(err)
	}
	if res.Token <= old || res.Node != "n1" {
		t.Fatalf("move of shard %d: %+v; want n1 with a token above %d", shard, res, old)
	}
	gap := lc.writeGap(t, shard, old, res.Token)
	if n := lc.staleAccepts(t, shard, old); n != 0 {
		t.Errorf("shard %d: %d writes under n3's token %d accepted after n1's first under %d", shard, n, old, res.Token)
	}
	t.Logf("%s; writes gap %v", res.Message, gap)
	if gap <= 0 {
		t.Error(fmt.Sprintf("shard %d: n1's first write under %d came before n3's last under %d", shard, res.Token, old))
	}
}
