package session

import (
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/transport"
)

// wireCaller delivers calls to a dispatcher, encoding as the transport
// does, and records the addresses called.
type wireCaller struct {
	d     *wire.Dispatcher
	addrs []string
}

func (w *wireCaller) Call(ctx context.Context, addr, method string, req, resp any) error {
	w.addrs = append(w.addrs, addr)
	body, err := transport.Encode(req)
	if err != nil {
		return err
	}
	out, err := w.d.ServeRPC(ctx, method, body)
	if err != nil {
		return err
	}
	return transport.Decode(out, resp)
}

// TestKeepAliveGoesToTheLeader: a keepalive goes to this node's lessor
// when it leads, over the wire to the leader otherwise, and nowhere when
// no leader is known; a refusal keeps its identity across the wire.
func TestKeepAliveGoesToTheLeader(t *testing.T) {
	d := wire.NewDispatcher(nil)
	d.Handle(wire.MethodKeepAlive, wire.Typed(func(_ context.Context, req wire.KeepAliveRequest) (wire.KeepAliveReply, error) {
		if req.Session == "gone" {
			return wire.KeepAliveReply{}, wire.ErrNoSession
		}
		return wire.KeepAliveReply{Index: 42}, nil
	}))
	c := &wireCaller{d: d}
	addr, self := "", false
	localCalls := 0
	send := SendKeepAlive(func() (string, bool) { return addr, self }, func(context.Context, string) (uint64, error) {
		localCalls++
		return 7, nil
	}, func() Caller { return c }, nil)
	ctx := context.Background()

	if _, err := send(ctx, "s1"); !errors.Is(err, wire.ErrNoLeader) || len(c.addrs) != 0 {
		t.Fatalf("no leader: %v, calls %v; want ErrNoLeader and no call", err, c.addrs)
	}
	addr, self = "leader:1", false
	if index, err := send(ctx, "s1"); err != nil || index != 42 || len(c.addrs) != 1 || c.addrs[0] != "leader:1" {
		t.Fatalf("remote leader: index %d, %v, calls %v", index, err, c.addrs)
	}
	if _, err := send(ctx, "gone"); !errors.Is(err, wire.ErrNoSession) {
		t.Fatalf("remote refusal: %v; want ErrNoSession", err)
	}
	addr, self = "me:1", true
	if index, err := send(ctx, "s1"); err != nil || index != 7 || localCalls != 1 || len(c.addrs) != 2 {
		t.Fatalf("leading: index %d, %v, %d local calls, calls %v", index, err, localCalls, c.addrs)
	}
}

// TestConfirmAnswersOnlyItsTerm: a voter confirms a leader only for the
// term it is in itself.
func TestConfirmAnswersOnlyItsTerm(t *testing.T) {
	d := wire.NewDispatcher(nil)
	d.Handle(wire.MethodConfirm, ServeConfirm(func() uint64 { return 5 }, "id-v"))
	ask := AskConfirm(&wireCaller{d: d})
	for term, want := range map[uint64]bool{4: false, 5: true, 6: false} {
		if ok, err := ask(context.Background(), Voter{ID: "id-v", Addr: "voter:1"}, term); err != nil || ok != want {
			t.Errorf("term %d: %v, %v; want %v", term, ok, err, want)
		}
	}
}

// TestConfirmChecksTheVoterIdentity: a confirmation names the voter's raft
// server ID, and whatever answers at its address as another node says no,
// whichever side checks: the answering node (a request for another ID),
// or the leader (an answer from a node that says it is another, as an
// older release that ignores the ID would give).
func TestConfirmChecksTheVoterIdentity(t *testing.T) {
	d := wire.NewDispatcher(nil)
	d.Handle(wire.MethodConfirm, ServeConfirm(func() uint64 { return 5 }, "id-new"))
	ask := AskConfirm(&wireCaller{d: d})
	if ok, err := ask(context.Background(), Voter{ID: "id-old", Addr: "voter:1"}, 5); err != nil || ok {
		t.Fatalf("another identity at the voter's address: %v, %v; want no", ok, err)
	}
	older := wire.NewDispatcher(nil) // answers yes for its term whatever the ID, naming itself
	older.Handle(wire.MethodConfirm, wire.Typed(func(_ context.Context, req wire.ConfirmRequest) (wire.ConfirmReply, error) {
		return wire.ConfirmReply{OK: req.Term == 5, ID: "id-new"}, nil
	}))
	if ok, err := AskConfirm(&wireCaller{d: older})(context.Background(), Voter{ID: "id-old", Addr: "voter:1"}, 5); err != nil || ok {
		t.Fatalf("an answer naming another identity: %v, %v; want no", ok, err)
	}
	legacy := wire.NewDispatcher(nil) // an older release: no ID either way
	legacy.Handle(wire.MethodConfirm, wire.Typed(func(_ context.Context, req wire.ConfirmRequest) (wire.ConfirmReply, error) {
		return wire.ConfirmReply{OK: req.Term == 5}, nil
	}))
	if ok, err := AskConfirm(&wireCaller{d: legacy})(context.Background(), Voter{ID: "id-old", Addr: "voter:1"}, 5); err != nil || !ok {
		t.Fatalf("an answer of an older release: %v, %v; want yes", ok, err)
	}
	if rep := serveConfirm(t, d, wire.ConfirmRequest{Term: 5}); !rep.OK || rep.ID != "id-new" {
		t.Fatalf("a request without an ID (older leader): %+v; want yes, naming the voter", rep)
	}
}

// serveConfirm sends req to d's confirmation handler and returns its reply.
func serveConfirm(t *testing.T, d *wire.Dispatcher, req wire.ConfirmRequest) wire.ConfirmReply {
	t.Helper()
	var rep wire.ConfirmReply
	if err := (&wireCaller{d: d}).Call(context.Background(), "voter:1", wire.MethodConfirm, req, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestVotersOfListsVotersOnly(t *testing.T) {
	got := VotersOf([]raft.Server{
		{ID: "a", Suffrage: raft.Voter, Address: transport.RaftAddress("10.0.0.1:7000", "id-a")},
		{ID: "b", Suffrage: raft.Nonvoter, Address: "x"},
		{ID: "c", Suffrage: raft.Voter, Address: "unparsable"},
	})
	if len(got) != 2 || got[0] != (Voter{ID: "a", Addr: "10.0.0.1:7000"}) || got[1] != (Voter{ID: "c"}) {
		t.Fatalf("voters %+v", got)
	}
}

// TestNotLeaderHereNamesAnotherLeader: the refusal points at the leader,
// never at this node.
func TestNotLeaderHereNamesAnotherLeader(t *testing.T) {
	for _, tc := range []struct {
		addr string
		self bool
		want string
	}{{"other:1", false, "other:1"}, {"me:1", true, ""}, {"", false, ""}} {
		err := NotLeaderHere(func() (string, bool) { return tc.addr, tc.self })()
		var nl *wire.NotLeaderError
		if !errors.As(err, &nl) || nl.Leader != tc.want || !errors.Is(err, wire.ErrNotLeader) {
			t.Errorf("leader %q (self %v): %v; want a NotLeaderError naming %q", tc.addr, tc.self, err, tc.want)
		}
	}
}
