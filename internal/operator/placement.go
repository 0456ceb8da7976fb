package operator

import (
	"context"
	"fmt"
	"slices"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/wire"
	"github.com/holdfast-go/holdfast/shardown"
)

// shardPlacement carries out a pin, unpin or move on this node, the
// leader: committed as an OpShardPin, and for a move awaited until the
// shard is owned on the target.
func (p *Operator) shardPlacement(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	v := p.o.View()
	if n := v.ShardCount(); int(req.Shard) >= n {
		return wire.OperateReply{Refused: fmt.Sprintf("shard %d does not exist: the cluster has %d shards (0 to %d)", req.Shard, n, n-1)}, nil
	}
	pin, pinned := v.ShardPin(req.Shard)
	if req.Action == wire.ActionShardUnpin {
		if !pinned {
			return wire.OperateReply{Message: fmt.Sprintf("shard %d was not pinned", req.Shard)}, nil
		}
		if err := p.commitPin(ctx, fsm.PinCmd{Shard: req.Shard, Clear: true}); err != nil {
			return wire.OperateReply{}, err
		}
		return wire.OperateReply{Node: pin.Node, Message: fmt.Sprintf("shard %d unpinned from %s: the balancer places it", req.Shard, pin.Node)}, nil
	}
	sess, ok := p.placeableSession(v, req.Target)
	if !ok {
		return wire.OperateReply{Refused: fmt.Sprintf("no node %q with a live, undrained session that may own shards: holdfastctl members lists the nodes", req.Target)}, nil
	}
	if why := refusedByRules(v, req.Shard, sess); why != "" {
		return wire.OperateReply{Refused: why}, nil
	}
	move := req.Action == wire.ActionShardMove
	if move && pinned && !pin.Once && pin.Node != req.Target {
		return wire.OperateReply{Refused: fmt.Sprintf("shard %d is pinned to %s: unpin it first, or pin it to %s", req.Shard, pin.Node, req.Target)}, nil
	}
	if sh, _ := v.Shard(req.Shard); move && sh.State == fsm.ShardOwned && sh.OwnerNode == req.Target {
		return wire.OperateReply{Node: req.Target, NodeID: sess.NodeID, Token: sh.Token,
			Message: fmt.Sprintf("shard %d is already owned by %s (token %d)", req.Shard, req.Target, sh.Token)}, nil
	}
	if err := p.commitPin(ctx, fsm.PinCmd{Shard: req.Shard, Node: req.Target, Once: move}); err != nil {
		return wire.OperateReply{}, err
	}
	rep := wire.OperateReply{Node: req.Target, NodeID: sess.NodeID}
	if !move {
		rep.Message = fmt.Sprintf("shard %d pinned to %s", req.Shard, req.Target)
		return rep, nil
	}
	sh, err := p.awaitOwned(ctx, req.Shard, req.Target)
	if err != nil {
		return wire.OperateReply{}, fmt.Errorf("shard %d is being moved to %s: %w", req.Shard, req.Target, err)
	}
	rep.Token, rep.Message = sh.Token, fmt.Sprintf("shard %d moved to %s (token %d)", req.Shard, req.Target, sh.Token)
	return rep, nil
}

// placeableSession returns the newest live, undrained session of node
// name, if it has one.
func (p *Operator) placeableSession(v *fsm.View, name string) (fsm.Session, bool) {
	var best fsm.Session
	found := false
	for _, s := range v.Sessions() {
		if s.Node != name || s.Drained || p.o.Expiring(s.ID) {
			continue
		}
		if !found || s.Gen > best.Gen || s.Gen == best.Gen && s.ID > best.ID {
			best, found = s, true
		}
	}
	return best, found
}

// commitPin commits an OpShardPin on this node, the leader.
func (p *Operator) commitPin(ctx context.Context, cmd fsm.PinCmd) error {
	_, err := p.o.CommitLeader(ctx, fsm.Command{Op: fsm.OpShardPin, Pin: &cmd})
	return err
}

// awaitOwned waits until this node's replica shows shard owned on node.
func (p *Operator) awaitOwned(ctx context.Context, shard uint32, node string) (fsm.Shard, error) {
	for {
		v := p.o.View()
		if sh, _ := v.Shard(shard); sh.State == fsm.ShardOwned && sh.OwnerNode == node {
			return sh, nil
		}
		select {
		case <-ctx.Done():
			return fsm.Shard{}, ctx.Err()
		case <-v.Changed():
		}
	}
}

// shardRule sets or clears a placement rule on this node, the leader.
func (p *Operator) shardRule(ctx context.Context, req wire.OperateRequest) (wire.OperateReply, error) {
	cmd := fsm.RuleCmd{Name: req.Target, Clear: req.Action == wire.ActionShardUnrule}
	if req.Target == "" || len(req.Target) > fsm.MaxNameLength {
		return wire.OperateReply{Refused: fmt.Sprintf("a rule needs a name of 1 to %d bytes", fsm.MaxNameLength)}, nil
	}
	if !cmd.Clear {
		r, err := shardown.ParseRule(req.Rule)
		if err != nil {
			return wire.OperateReply{Refused: err.Error()}, nil
		}
		if n := p.o.View().ShardCount(); int(r.Last) >= n {
			return wire.OperateReply{Refused: fmt.Sprintf("rule %s covers shard %d: the cluster has %d shards (0 to %d)", req.Rule, r.Last, n, n-1)}, nil
		}
		for _, t := range r.Require {
			if why := fsm.ValidTag(t); why != "" {
				return wire.OperateReply{Refused: why}, nil
			}
		}
		cmd.First, cmd.Last, cmd.Require = uint32(r.First), uint32(r.Last), r.Require
	}
	res, err := p.o.CommitLeader(ctx, fsm.Command{Op: fsm.OpShardRule, Rule: &cmd})
	if err != nil {
		return wire.OperateReply{}, err
	}
	switch {
	case cmd.Clear && res.Count == 0:
		return wire.OperateReply{Message: fmt.Sprintf("there was no rule %q", cmd.Name)}, nil
	case cmd.Clear:
		return wire.OperateReply{Message: fmt.Sprintf("rule %q removed", cmd.Name)}, nil
	}
	return wire.OperateReply{Message: fmt.Sprintf("rule %q set: shards %d-%d need %v", cmd.Name, cmd.First, cmd.Last, cmd.Require)}, nil
}

// refusedByRules says which rule keeps session sess from owning shard (""
// when none does).
func refusedByRules(v *fsm.View, shard uint32, sess fsm.Session) string {
	for _, r := range v.Rules() {
		if shard < r.First || shard > r.Last {
			continue
		}
		for _, t := range r.Require {
			if !slices.Contains(sess.Tags, t) {
				return fmt.Sprintf("rule %q gives shard %d only to nodes tagged %v, and %s lacks %q", r.Name, shard, r.Require, sess.Node, t)
			}
		}
	}
	return ""
}
