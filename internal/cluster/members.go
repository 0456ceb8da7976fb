package cluster

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/pause"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/membership"
)

// Join attaches the gossip member m and makes a first join attempt at the
// seeds (Options.Join). A duplicate name is returned (an error wrapping
// membership.ErrDuplicateName); other join failures are logged and retried
// in the background, by a goroutine Close waits for, while this node is
// alone in the gossip pool. Call it once, before Start.
func (cl *Cluster) Join(ctx context.Context, m Members) error {
	cl.members = m
	cl.o.Metrics.bind(cl)
	if len(cl.o.Join) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, cl.o.RPCTimeout)
	defer cancel()
	if _, err := m.Join(ctx, cl.o.Join); err != nil {
		if errors.Is(err, membership.ErrDuplicateName) || errors.Is(err, wire.ErrForeignCluster) {
			return err
		}
		cl.logJoinFailure(err, 1, joinLogFirst)
		cl.goLoop(cl.retryJoin)
	}
	return nil
}

// Join retry pacing: attempts back off from joinRetryFirst to
// joinRetryMax; failures are logged at warning level at once, then with a
// backoff of their own from joinLogFirst to joinLogMax.
const (
	joinRetryFirst = 200 * time.Millisecond
	joinRetryMax   = 5 * time.Second
	joinLogFirst   = time.Second
	joinLogMax     = time.Minute
)

// retryJoin keeps trying the seeds with backoff while this node is alone
// in the gossip pool: until a seed answers, or another member reaches it.
func (cl *Cluster) retryJoin() {
	backoff, logEvery := joinRetryFirst, joinLogFirst
	lastLog := time.Now()
	for attempt := 2; pause.For(cl.ctx, pause.Jitter(backoff)); attempt++ {
		if n := cl.aliveMembers(); n > 1 {
			cl.log.Info("in the gossip pool: another member reached this node; no longer retrying the seeds", "seeds", cl.o.Join, "alive", n)
			return
		}
		ctx, cancel := context.WithTimeout(cl.ctx, cl.o.RPCTimeout)
		_, err := cl.members.Join(ctx, cl.o.Join)
		cancel()
		switch {
		case err == nil:
			cl.log.Info("joined the gossip pool", "seeds", cl.o.Join, "attempts", attempt)
			return
		case errors.Is(err, membership.ErrDuplicateName):
			cl.log.Error("cannot join: node name in use", "error", err)
			return
		case errors.Is(err, wire.ErrForeignCluster):
			cl.log.Error("cannot join: this node's data dir belongs to another cluster than the seeds'; "+
				"restart it with Config.Cluster.LeaveCluster set to its cluster to leave it, or give it that cluster's seeds",
				"cluster", cl.ClusterID(), "error", err)
			return
		case cl.ctx.Err() != nil:
			return
		case time.Since(lastLog) >= logEvery:
			logEvery = min(2*logEvery, joinLogMax)
			cl.logJoinFailure(err, attempt, logEvery)
			lastLog = time.Now()
		default:
			cl.log.Debug("join failed; retrying", "seeds", cl.o.Join, "attempt", attempt, "error", err)
		}
		backoff = min(backoff*2, joinRetryMax)
	}
}

// logJoinFailure logs a failed join as a warning: the error on one line
// and a hint (wrong port, nothing listening, other gossip keys...).
func (cl *Cluster) logJoinFailure(err error, attempt int, next time.Duration) {
	line, hint := describeJoinError(err)
	args := []any{"seeds", cl.o.Join, "attempt", attempt, "error", line}
	if hint != "" {
		args = append(args, "hint", hint)
	}
	if cl.members.Encrypted() || strings.Contains(hint, "gossip keys") {
		args = append(args, "encrypted", cl.members.Encrypted())
	}
	args = append(args, "next_report", next)
	if strings.Contains(line, "only this node") {
		// A DNS name that lists only this node so far (the first pod of a
		// StatefulSet): a normal start, the others appear soon.
		cl.log.Info("join: the seeds name only this node so far; retrying while this node is alone", args...)
		return
	}
	cl.log.Warn("cannot join the gossip pool; retrying while this node is alone", args...)
}

// aliveMembers counts the members gossip shows alive, this node included.
func (cl *Cluster) aliveMembers() int {
	n := 0
	for _, m := range cl.members.Members() {
		if m.State == membership.Alive {
			n++
		}
	}
	return n
}

// memberLoop turns membership events into work: the leader reconciles the
// raft configuration, the bootstrapper re-evaluates.
func (cl *Cluster) memberLoop() {
	for {
		select {
		case <-cl.ctx.Done():
			return
		case ev, ok := <-cl.members.Events():
			if !ok {
				return
			}
			cl.log.Debug("member event", "kind", ev.Kind.String(), "member", ev.Member.Name)
			cl.kickReconcile()
			cl.boot.poke()
		}
	}
}

// clusterIDLoop records the cluster (and its incarnation) in the data dir
// and publishes it in gossip as soon as this node's replica shows it.
func (cl *Cluster) clusterIDLoop() {
	recorded := ""
	for {
		v := cl.o.View()
		if c := v.Cluster(); c.ID != "" && c.ID != recorded && cl.record(c.ID, c.Created) {
			recorded = c.ID
		}
		select {
		case <-cl.ctx.Done():
			return
		case <-v.Changed():
		}
	}
}

// kickReconcile wakes the leader's reconciler without blocking.
func (cl *Cluster) kickReconcile() {
	select {
	case cl.kick <- struct{}{}:
	default:
	}
}

// MemberInfo is a gossip member and its place in the raft configuration.
type MemberInfo struct {
	membership.Member
	InConfig bool // in the raft configuration
	Voter    bool // ... as a voter
}

// Members lists every member gossip knows of (failed and left ones until
// gossip forgets them), in gossip's order, each with its raft suffrage.
func (cl *Cluster) Members() []MemberInfo {
	voter := map[string]bool{}
	for _, s := range cl.servers() {
		voter[string(s.ID)] = s.Suffrage == raft.Voter
	}
	var out []MemberInfo
	for _, m := range cl.members.Members() {
		v, in := voter[m.Meta.NodeID]
		out = append(out, MemberInfo{Member: m, InConfig: in, Voter: v})
	}
	return out
}

// Suffrage is a member's place in the raft configuration.
type Suffrage string

// The suffrages.
const (
	SuffrageVoter    Suffrage = "voter"
	SuffrageNonVoter Suffrage = "non-voter"
	SuffrageNone     Suffrage = "none" // not (yet) in the raft configuration
)

// MemberState is what gossip says of a member.
type MemberState string

// The member states.
const (
	MemberAlive   MemberState = "alive"
	MemberSuspect MemberState = "suspect"
	MemberFailed  MemberState = "failed"
	MemberLeft    MemberState = "left"
)

// Member describes one node as this node sees it.
type Member struct {
	Name       string
	ID         string // identity and raft server ID
	RPCAddr    string
	GossipAddr string
	State      MemberState
	Since      time.Time // when State last changed, on this node's clock
	Eligible   bool      // has a data dir, may become a voter
	Suffrage   Suffrage
	ClusterID  string
	Zone       string
	Tags       string // placement tags, comma-separated
}

// MemberList is Members described as Coordinator.Members shows them.
func (cl *Cluster) MemberList() []Member {
	var out []Member
	for _, m := range cl.Members() {
		s := SuffrageNone
		if m.Voter {
			s = SuffrageVoter
		} else if m.InConfig {
			s = SuffrageNonVoter
		}
		out = append(out, Member{Name: m.Name, ID: m.Meta.NodeID, RPCAddr: m.Meta.RPCAddr, GossipAddr: m.Addr,
			State: MemberState(m.State.String()), Since: m.Since, Eligible: m.Meta.Voter, Suffrage: s,
			ClusterID: m.Meta.ClusterID, Zone: m.Meta.Zone, Tags: m.Meta.Tags})
	}
	return out
}

// GossipConfig is this node's gossip member configuration: its name, the
// meta and admission rule of this part, keys, bound at bind and advertising
// advertise ("": the bound address), with memberlist's local profile when
// local (else LAN). The host adds the transport, if any.
func (cl *Cluster) GossipConfig(bind, advertise string, local bool, keys [][]byte) membership.Config {
	mc := membership.Config{NodeName: cl.o.NodeName, BindAddr: bind, AdvertiseAddr: advertise, Profile: membership.LAN,
		Meta: cl.LocalMeta(), Accept: cl.Accept, Keys: keys, Logger: cl.log.With("subsystem", "gossip")}
	if local {
		mc.Profile = membership.Local
	}
	return mc
}

// Voters returns the raft IDs of the current voters.
func (cl *Cluster) Voters() []string {
	var out []string
	for _, s := range cl.servers() {
		if s.Suffrage == raft.Voter {
			out = append(out, string(s.ID))
		}
	}
	return out
}

// NonVoters returns the raft IDs of the current non-voters.
func (cl *Cluster) NonVoters() []string {
	var out []string
	for _, s := range cl.servers() {
		if s.Suffrage == raft.Nonvoter {
			out = append(out, string(s.ID))
		}
	}
	return out
}

// NameOf returns the gossip name of the member with raft ID id, or "".
func (cl *Cluster) NameOf(id string) string {
	name := ""
	for _, m := range cl.members.Members() {
		if m.Meta.NodeID == id {
			name = m.Name
		}
	}
	return name
}

// RPCAddrOf returns the RPC address that the live gossip member with raft
// ID id (of this cluster, or one that has not learned it yet) advertises,
// for raft's dials (transport.Transport.SetRaftResolver): a voter restarted
// on another address is reached there before a leader can write the new
// address into the configuration. It reports false, and dials keep the
// configuration's address, for an ID gossip does not show alive, or shows
// alive under two names (one of them lies). With TLS the dial then checks
// that the peer's certificate names that member. Call it after Join.
func (cl *Cluster) RPCAddrOf(id string) (string, bool) {
	ours := cl.ClusterID()
	addr, found := "", 0
	for _, m := range cl.members.Members() {
		if m.Meta.NodeID == id && m.State == membership.Alive && m.Meta.RPCAddr != "" &&
			(m.Meta.ClusterID == "" || ours == "" || m.Meta.ClusterID == ours) {
			addr = m.Meta.RPCAddr
			found++
		}
	}
	return addr, found == 1
}
