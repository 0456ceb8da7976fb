package session

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// TestKeepAliveCarriesLoads: a remote keepalive carries the loads the
// sender gives; the leader's lessor passes those of an answered keepalive
// to LessorOptions.Loads and drops those of a refused one. A request
// without loads (an earlier release's) is answered as before, and an
// earlier release's decoder reads a request with loads.
func TestKeepAliveCarriesLoads(t *testing.T) {
	r := newLessorRig(t, 1)
	var mu sync.Mutex
	got := map[string][]uint32{}
	r.l.o.Loads = func(session string, shards []uint32, loads []float32) {
		mu.Lock()
		defer mu.Unlock()
		got[session] = slices.Clone(shards)
		if len(loads) != len(shards) || loads[0] != 1.5 {
			t.Errorf("loads %v for shards %v", loads, shards)
		}
	}
	r.rep.create(t, "s1", testTTL)
	r.l.Activate(r.rep.f.View())
	d := wire.NewDispatcher(nil)
	r.l.Register(d)
	c := &wireCaller{d: d}
	leader := func() (string, bool) { return "leader:1", false }
	local := func(context.Context, string) (uint64, error) { t.Error("local keepalive"); return 0, nil }
	loads := func() ([]uint32, []float32) { return []uint32{3, 5}, []float32{1.5, 2} }
	ctx := context.Background()
	if _, err := SendKeepAlive(leader, local, func() Caller { return c }, loads)(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := SendKeepAlive(leader, local, func() Caller { return c }, loads)(ctx, "gone"); err == nil {
		t.Fatal("keepalive of an unknown session answered")
	}
	if _, err := SendKeepAlive(leader, local, func() Caller { return c }, nil)(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(got) != 1 || !slices.Equal(got["s1"], []uint32{3, 5}) {
		t.Fatalf("loads recorded %v, want s1's only", got)
	}
	mu.Unlock()

	body, err := transport.Encode(wire.KeepAliveRequest{Session: "s1", Shards: []uint32{1}, Loads: []float32{2}})
	if err != nil {
		t.Fatal(err)
	}
	var old struct {
		Session string `msgpack:"session"`
	}
	if err := transport.Decode(body, &old); err != nil || old.Session != "s1" {
		t.Fatalf("an earlier release's decoder: %+v, %v", old, err)
	}
}
