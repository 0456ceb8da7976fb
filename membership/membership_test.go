package membership

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/testkit"
)

func startCluster(t *testing.T, names ...string) []*Membership {
	t.Helper()
	nodes := make([]*Membership, len(names))
	for i, n := range names {
		nodes[i] = startNode(t, n)
	}
	for _, m := range nodes[1:] {
		join(t, m, nodes[0])
	}
	testkit.Eventually(t, "convergence", waitTimeout, func() error { return allAlive(nodes, names...) })
	return nodes
}

func TestJoinSetMetaAndEvents(t *testing.T) {
	names := []string{"n1", "n2", "n3"}
	nodes := make([]*Membership, len(names))
	recs := make([]*recorder, len(names))
	for i, n := range names {
		nodes[i] = startNode(t, n)
		recs[i] = record(nodes[i])
	}
	join(t, nodes[1], nodes[0])
	join(t, nodes[2], nodes[1])
	testkit.Eventually(t, "convergence", waitTimeout, func() error { return allAlive(nodes, names...) })

	for _, m := range nodes {
		for _, o := range nodes {
			mb, _ := m.Member(o.Local().Name)
			if mb.Addr != o.Addr() || mb.Meta != o.Local().Meta {
				t.Errorf("%s sees %+v, want addr %s meta %+v", m.Local().Name, mb, o.Addr(), o.Local().Meta)
			}
			if mb.Meta.Version != MetaVersion || mb.Meta.NodeID != "id-"+o.Local().Name {
				t.Errorf("%s sees meta %+v for %s", m.Local().Name, mb.Meta, o.Local().Name)
			}
		}
		if got := m.Members(); got[0].Name != "n1" || got[1].Name != "n2" || got[2].Name != "n3" {
			t.Errorf("Members not sorted: %v", got)
		}
	}
	for i, r := range recs {
		for _, n := range names {
			testkit.Eventually(t, fmt.Sprintf("%s: join event for %s", names[i], n), waitTimeout, func() error { return r.has(Join, n, nil) })
		}
	}

	meta := nodes[0].Local().Meta
	meta.ClusterID = "c1"
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := nodes[0].SetMeta(ctx, meta); err != nil {
		t.Fatalf("SetMeta: %v", err)
	}
	if got := nodes[0].Local().Meta.ClusterID; got != "c1" {
		t.Errorf("Local().Meta.ClusterID = %q", got)
	}
	for i, m := range nodes {
		testkit.Eventually(t, names[i]+" sees the new meta", waitTimeout, func() error {
			if mb, _ := m.Member("n1"); mb.Meta.ClusterID != "c1" {
				return fmt.Errorf("meta %+v", mb.Meta)
			}
			return nil
		})
	}
	for i, r := range recs[1:] {
		testkit.Eventually(t, names[i+1]+": update event", waitTimeout, func() error {
			return r.has(Update, "n1", func(mb Member) bool { return mb.Meta.ClusterID == "c1" })
		})
	}
}

func TestLeave(t *testing.T) {
	nodes := startCluster(t, "n1", "n2", "n3")
	rec := record(nodes[0])
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := nodes[2].Leave(ctx); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	if err := nodes[2].Leave(ctx); err != nil {
		t.Fatalf("second Leave: %v", err)
	}
	if err := memberIs(nodes[2], "n3", Left); err != nil {
		t.Error(err)
	}
	for _, m := range nodes[:2] {
		testkit.Eventually(t, "n3 left", waitTimeout, func() error { return memberIs(m, "n3", Left) })
	}
	testkit.Eventually(t, "leave event", waitTimeout, func() error { return rec.has(Leave, "n3", nil) })
	if err := rec.has(Fail, "n3", nil); err == nil {
		t.Log("n3 was reported failed before its leave notice arrived")
	}
	mb, _ := nodes[0].Member("n3")
	if mb.Since.IsZero() || time.Since(mb.Since) > waitTimeout {
		t.Errorf("Since = %v", mb.Since)
	}
	if err := nodes[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := nodes[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
}

func TestFailure(t *testing.T) {
	nodes := startCluster(t, "n1", "n2", "n3")
	rec := record(nodes[0])
	if err := nodes[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, m := range nodes[:2] {
		testkit.Eventually(t, "n3 failed", waitTimeout, func() error { return memberIs(m, "n3", Failed) })
	}
	testkit.Eventually(t, "fail event", waitTimeout, func() error { return rec.has(Fail, "n3", nil) })
	if err := memberIs(nodes[0], "n2", Alive); err != nil {
		t.Error(err)
	}
	if _, err := nodes[2].Join(context.Background(), []string{nodes[0].Addr()}); !errors.Is(err, ErrClosed) {
		t.Errorf("Join after Shutdown: %v, want ErrClosed", err)
	}
}

// TestDeadNameReclaimedAtNewAddress: a node that crashed (gossip declares
// it failed) comes back under its name at another address and is alive
// there in every member list, as a restarted container with a new IP.
func TestDeadNameReclaimedAtNewAddress(t *testing.T) {
	nodes := startCluster(t, "n1", "n2", "n3")
	old := nodes[2].Addr()
	if err := nodes[2].Shutdown(); err != nil { // no leave: a crash
		t.Fatal(err)
	}
	for _, m := range nodes[:2] {
		testkit.Eventually(t, "n3 failed", waitTimeout, func() error { return memberIs(m, "n3", Failed) })
	}
	back := startNode(t, "n3")
	if back.Addr() == old {
		t.Fatalf("the new n3 got the old address %s", old)
	}
	join(t, back, nodes[0])
	// The join's state exchange reaches the seed's memberlist before Join
	// returns, but the seed's member table is updated from memberlist's
	// event delegate afterwards: wait for it as for the others.
	for _, m := range nodes[:2] {
		testkit.Eventually(t, "n3 alive at its new address", waitTimeout, func() error {
			if err := memberIs(m, "n3", Alive); err != nil {
				return err
			}
			if mb, _ := m.Member("n3"); mb.Addr != back.Addr() {
				return fmt.Errorf("n3 at %s", mb.Addr)
			}
			return nil
		})
	}
}

func TestDuplicateName(t *testing.T) {
	nodes := startCluster(t, "n1", "n2")
	orig := nodes[0].Addr()
	for _, seed := range nodes {
		dup := startNode(t, "n1")
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		_, err := dup.Join(ctx, []string{seed.Addr()})
		cancel()
		if !errors.Is(err, ErrDuplicateName) {
			t.Fatalf("duplicate Join via %s: err = %v, want ErrDuplicateName", seed.Local().Name, err)
		}
		if !strings.Contains(err.Error(), `node name "n1" is already in use by `+orig) {
			t.Errorf("error %q does not name the node and its address", err)
		}
		dup.Shutdown()
	}
	// Let gossip run (a third node joins and converges), then check again.
	n3 := startNode(t, "n3")
	join(t, n3, nodes[1])
	all := append(nodes, n3)
	testkit.Eventually(t, "convergence", waitTimeout, func() error { return allAlive(all, "n1", "n2", "n3") })
	for _, m := range all {
		if mb, _ := m.Member("n1"); mb.Addr != orig {
			t.Errorf("%s sees n1 at %s, want %s", m.Local().Name, mb.Addr, orig)
		}
	}
}

func TestAcceptRefusesForeignCluster(t *testing.T) {
	var refused atomic.Int32
	accept := func(mb Member) error {
		if mb.Meta.ClusterID != "" && mb.Meta.ClusterID != "c1" {
			if mb.Name == "foreign" {
				refused.Add(1)
			}
			return fmt.Errorf("foreign cluster %q", mb.Meta.ClusterID)
		}
		return nil
	}
	a := startNode(t, "a", func(c *Config) { c.Accept = accept; c.Meta.ClusterID = "c1" })
	b := startNode(t, "b", func(c *Config) { c.Meta.ClusterID = "c1" })
	join(t, b, a)
	testkit.Eventually(t, "a and b", waitTimeout, func() error { return allAlive([]*Membership{a, b}, "a", "b") })

	f := startNode(t, "foreign", func(c *Config) { c.Meta.ClusterID = "other" })
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := a.Join(ctx, []string{f.Addr()}); err == nil || !strings.Contains(err.Error(), "foreign cluster") {
		t.Errorf("a joining the foreign node: err = %v, want a refusal", err)
	}
	// b accepts anyone, so news of the foreign node reaches a through b.
	join(t, f, b)
	testkit.Eventually(t, "b sees foreign", waitTimeout, func() error { return memberIs(b, "foreign", Alive) })
	testkit.Eventually(t, "a refuses gossip about foreign", waitTimeout, func() error {
		if refused.Load() < 3 {
			return fmt.Errorf("%d refusals", refused.Load())
		}
		return nil
	})
	if _, ok := a.Member("foreign"); ok {
		t.Fatalf("a lists the refused node: %v", a.Members())
	}
	for _, mb := range a.Members() {
		if mb.Name == "foreign" {
			t.Fatalf("a lists the refused node: %v", a.Members())
		}
	}
}

func TestSlowConsumerDoesNotBlockGossip(t *testing.T) {
	// Nobody reads Events while the nodes join and change meta.
	nodes := startCluster(t, "n1", "n2", "n3")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for i, m := range nodes {
		meta := m.Local().Meta
		meta.Zone = fmt.Sprintf("z%d", i)
		if err := m.SetMeta(ctx, meta); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, "zones", waitTimeout, func() error {
		for _, m := range nodes {
			for i, o := range nodes {
				if mb, _ := m.Member(o.Local().Name); mb.Meta.Zone != fmt.Sprintf("z%d", i) {
					return fmt.Errorf("%s sees %+v", m.Local().Name, mb)
				}
			}
		}
		return nil
	})
	// The backlog is still there, in order, starting with the local Join.
	e := <-nodes[1].Events()
	if e.Kind != Join || e.Member.Name != "n2" {
		t.Errorf("first event = %+v, want the local join", e)
	}
	// Shutdown closes the channel even with a backlog.
	if err := nodes[1].Shutdown(); err != nil {
		t.Fatal(err)
	}
	for range nodes[1].Events() {
	}
}

func TestConfigValidation(t *testing.T) {
	big := Meta{NodeID: strings.Repeat("x", MaxMetaSize)}
	cases := []struct {
		field string
		cfg   Config
	}{
		{"NodeName", Config{BindAddr: "127.0.0.1:0"}},
		{"BindAddr", Config{NodeName: "n"}},
		{"BindAddr", Config{NodeName: "n", BindAddr: "127.0.0.1"}},
		{"BindAddr", Config{NodeName: "n", BindAddr: "127.0.0.1:99999"}},
		{"AdvertiseAddr", Config{NodeName: "n", BindAddr: "127.0.0.1:0", AdvertiseAddr: "nope"}},
		{"Profile", Config{NodeName: "n", BindAddr: "127.0.0.1:0", Profile: 7}},
		{"ReapAfter", Config{NodeName: "n", BindAddr: "127.0.0.1:0", ReapAfter: -time.Second}},
		{"Meta", Config{NodeName: "n", BindAddr: "127.0.0.1:0", Meta: big}},
	}
	for _, c := range cases {
		_, err := New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), "Config."+c.field) {
			t.Errorf("New(%+v) = %v, want an error naming Config.%s", c.cfg, err, c.field)
		}
	}
	m, err := New(Config{NodeName: "n", BindAddr: "127.0.0.1:0", Profile: Local})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
}

func TestStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Alive.String(), "alive"}, {Suspect.String(), "suspect"}, {Failed.String(), "failed"},
		{Left.String(), "left"}, {State(9).String(), "State(9)"},
		{Join.String(), "join"}, {Update.String(), "update"}, {Leave.String(), "leave"},
		{Fail.String(), "fail"}, {EventKind(-1).String(), "EventKind(-1)"},
		{LAN.String(), "lan"}, {Local.String(), "local"}, {Profile(5).String(), "Profile(5)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestCompressedAndPlainNodesMix: a node that compresses its gossip and one
// that does not join one pool and see each other's meta changes, so a pool
// can change the setting one node at a time.
func TestCompressedAndPlainNodesMix(t *testing.T) {
	z := startNode(t, "z1", func(c *Config) { c.Compress = true })
	p := startNode(t, "p2")
	join(t, p, z)
	nodes := []*Membership{z, p}
	testkit.Eventually(t, "convergence", waitTimeout, func() error { return allAlive(nodes, "z1", "p2") })
	for i, m := range nodes {
		meta := m.Local().Meta
		meta.Zone = fmt.Sprintf("zone-%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		err := m.SetMeta(ctx, meta)
		cancel()
		if err != nil {
			t.Fatalf("SetMeta(%s): %v", m.Local().Name, err)
		}
	}
	for i, m := range nodes {
		other := nodes[1-i]
		want := fmt.Sprintf("zone-%d", 1-i)
		testkit.Eventually(t, m.Local().Name+" sees the other's new zone", waitTimeout, func() error {
			if mb, _ := m.Member(other.Local().Name); mb.Meta.Zone != want {
				return fmt.Errorf("%s sees %+v", m.Local().Name, mb.Meta)
			}
			return nil
		})
	}
}
