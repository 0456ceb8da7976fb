package operator

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
)

// fakeRaft is this node's raft host: leader at addr when self.
type fakeRaft struct {
	addr string
	self bool
}

func (r *fakeRaft) LeaderRPCAddr() (string, bool)      { return r.addr, r.self }
func (r *fakeRaft) TransferLeadership(context.Context) {}

// fakeCluster is a raft configuration of three voters named n1 to n3.
type fakeCluster struct {
	decommission func(context.Context, wire.LeaveRequest) (wire.LeaveReply, error)
}

func (fakeCluster) Voters() []string    { return []string{"id1", "id2", "id3"} }
func (fakeCluster) NonVoters() []string { return nil }
func (fakeCluster) NameOf(id string) string {
	return map[string]string{"id1": "n1", "id2": "n2", "id3": "n3"}[id]
}
func (c fakeCluster) Decommission(ctx context.Context, req wire.LeaveRequest) (wire.LeaveReply, error) {
	return c.decommission(ctx, req)
}

// leader is a three-voter cluster seen from its leader, n1; n2 is alive,
// n3 is gone.
func leader(t *testing.T) (*Operator, *Options) {
	t.Helper()
	o := &Options{NodeName: "n1", ID: "id1", RPCTimeout: time.Second, Log: slog.New(slog.DiscardHandler),
		Raft: &fakeRaft{addr: "addr1", self: true},
		Members: func() []membership.Member {
			member := func(name, id string, state membership.State) membership.Member {
				return membership.Member{Name: name, State: state, Meta: membership.Meta{NodeID: id, RPCAddr: "addr-" + name}}
			}
			return []membership.Member{member("n1", "id1", membership.Alive), member("n2", "id2", membership.Alive),
				member("n3", "id3", membership.Failed)}
		},
		Cluster: fakeCluster{},
		Call: func(context.Context, string, string, any, any) error {
			t.Error("unexpected RPC")
			return nil
		},
	}
	return New(*o), o
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct{ action, target, want string }{
		{wire.ActionDrain, "n1", ""},
		{wire.ActionDrain, "", "drain needs a target"},
		{wire.ActionStepDown, "", ""},
		{wire.ActionShardPlan, "", ""},
		{wire.ActionShardRule, "", "shard-rule needs a target"},
		{"reboot", "n1", `unknown action "reboot"`},
	} {
		if got := Check(tc.action, tc.target); got != tc.want {
			t.Errorf("Check(%q, %q) = %q, want %q", tc.action, tc.target, got, tc.want)
		}
	}
}

func TestRemovePeerRefusals(t *testing.T) {
	p, _ := leader(t)
	for _, tc := range []struct{ target, want string }{
		{"n9", `no server "n9" in the raft configuration (it has n1, n2, n3)`},
		{"n1", "n1 is the raft leader: step it down first"},
		{"n2", "n2 is alive: decommission it"},
	} {
		rep, err := p.Serve(context.Background(), wire.OperateRequest{Action: wire.ActionRemovePeer, Target: tc.target})
		if err != nil || !strings.HasPrefix(rep.Refused, tc.want) {
			t.Errorf("remove-peer %s = %+v, %v; want refused %q", tc.target, rep, err, tc.want)
		}
		if rep.Leader != "n1" || rep.LeaderID != "id1" {
			t.Errorf("remove-peer %s: the reply names leader %q (%q), want n1 (id1)", tc.target, rep.Leader, rep.LeaderID)
		}
	}
}

func TestRemovePeerGone(t *testing.T) {
	p, o := leader(t)
	o.Cluster = fakeCluster{decommission: func(_ context.Context, req wire.LeaveRequest) (wire.LeaveReply, error) {
		if req.ID != "id3" || !req.Force {
			t.Errorf("decommission %+v, want id3 forced", req)
		}
		return wire.LeaveReply{}, nil
	}}
	*p = *New(*o)
	rep, err := p.Serve(context.Background(), wire.OperateRequest{Action: wire.ActionRemovePeer, Target: "n3"})
	if err != nil || rep.Refused != "" || rep.NodeID != "id3" || rep.Message != "removed n3 from the raft configuration" {
		t.Errorf("remove-peer n3 = %+v, %v", rep, err)
	}
}

func TestLocalDrainOfAnotherNodeRefused(t *testing.T) {
	p, _ := leader(t)
	rep, err := p.Serve(context.Background(), wire.OperateRequest{Action: wire.ActionDrain, Target: "n2", Local: true})
	if err != nil || rep.Refused != "this node is n1, not n2" {
		t.Errorf("local drain of n2 = %+v, %v", rep, err)
	}
}

func TestServeOnFollowerNamesLeader(t *testing.T) {
	p, o := leader(t)
	o.Raft = &fakeRaft{addr: "addr2"}
	*p = *New(*o)
	_, err := p.Serve(context.Background(), wire.OperateRequest{Action: wire.ActionStepDown})
	var nl *wire.NotLeaderError
	if !errors.As(err, &nl) || nl.Leader != "addr2" {
		t.Errorf("Serve on a follower = %v, want a NotLeaderError naming addr2", err)
	}
}

func TestOperateWaitsForLeaderUntilCtxEnds(t *testing.T) {
	p, o := leader(t)
	o.Raft = &fakeRaft{}
	*p = *New(*o)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Operate(ctx, wire.OperateRequest{Action: wire.ActionStepDown})
	if !errors.Is(err, wire.ErrNoLeader) || !errors.Is(err, context.Canceled) {
		t.Errorf("Operate without a leader = %v, want ErrNoLeader and ctx's error", err)
	}
}
