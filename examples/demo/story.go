package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// demo is the story's state, step by step.
type demo struct {
	o     options
	p     *printer
	start time.Time
	nodes []*node

	leader    *node // raft leader when the story began; the narrator's view
	victim    *node // the node that is paused
	auditor   coordinator.Holder
	pausedAt  time.Time
	frozen    []*zombie
	moved     map[coordinator.ShardID]coordinator.Holder // the new owners
	firstMove time.Time                                  // when the leader's view first showed a moved shard
}

func (d *demo) intro() {
	d.p.say("holdfast demo: %d nodes on loopback, %s, session TTL %v", d.o.nodes, plural(d.o.shards, "shard"), d.o.ttl)
	d.p.say("Every node runs a worker for each shard it owns. The workers append to one shared")
	d.p.say("SQLite file with fenced writes: a write commits only if no larger token was")
	d.p.say("accepted for its shard before. The nodes talk mutual TLS (certificates from a CA")
	d.p.say("made in this process) and encrypt their gossip.")
}

// form waits for the cluster and its shard table, then prints the table.
func (d *demo) form(ctx context.Context) error {
	d.p.section("1. A cluster forms")
	if err := poll(ctx, "the cluster forms", func() bool { return formed(d.nodes) }); err != nil {
		return err
	}
	d.leader = raftLeader(d.nodes)
	d.p.say("raft leader %s, cluster formed after %s", d.leader.name, round(time.Since(d.start)))
	c := d.leader.c
	if err := stable(ctx, c, d.nodes, 500*time.Millisecond); err != nil {
		return err
	}
	err := poll(ctx, "someone holds the auditor lease", func() bool {
		var ok bool
		d.auditor, ok = c.Holder(auditorLease)
		return ok
	})
	if err != nil {
		return err
	}
	d.p.say("every shard owned after %s; the token is what each owner writes with:\n", round(time.Since(d.start)))
	d.p.shardTable(c)
	d.p.say("\nlease %q held by %s, token %d", auditorLease, d.auditor.Node, d.auditor.Token)
	return nil
}

// pickVictim returns a node that owns shards and is not the raft leader
// (pausing the leader would show an election instead), preferring the
// auditor's holder so that its lease moves too.
func (d *demo) pickVictim() *node {
	var best *node
	for _, n := range d.nodes {
		if n == d.leader || len(n.c.Owned()) == 0 {
			continue
		}
		if n.name == d.auditor.Node.Name {
			return n
		}
		if best == nil || len(n.c.Owned()) > len(best.c.Owned()) {
			best = n
		}
	}
	return best
}

// pause freezes the victim's workers between their lease check and their
// write, then stops its network.
func (d *demo) pause(ctx context.Context) error {
	v := d.pickVictim()
	if v == nil {
		return errors.New("no node other than the raft leader owns a shard")
	}
	d.victim = v
	d.p.section(fmt.Sprintf("2. %s stops, as a process under SIGSTOP would", v.name))
	v.frz.freeze()
	err := poll(ctx, v.name+"'s workers freeze", func() bool {
		n := len(v.frz.frozen())
		return n > 0 && n == v.ws.count()
	})
	if err != nil {
		return err
	}
	v.net.pause()
	d.pausedAt = time.Now()
	d.frozen = v.frz.frozen()
	slices.SortFunc(d.frozen, func(a, b *zombie) int { return int(a.lease.Shard()) - int(b.lease.Shard()) })
	d.p.say("%s's workers each checked their lease, then stopped before writing:", v.name)
	for _, z := range d.frozen {
		d.p.say("  shard %d\ttoken %d\tlease valid for %s more", z.lease.Shard(), z.lease.Token(), round(z.lease.Remaining()))
	}
	d.p.flush()
	d.p.say("Its network is paused too: no keepalives reach the raft leader, no raft, no RPC.")
	return nil
}

// move watches the shard table on the leader until every shard of the
// victim has a new owner with a larger token, and the auditor lease too if
// the victim held it; then it waits until each new owner has written.
func (d *demo) move(ctx context.Context) error {
	d.p.section("3. The leader expires its session and moves its shards")
	c := d.leader.c
	d.moved = map[coordinator.ShardID]coordinator.Holder{}
	auditorMoved := d.auditor.Node.Name != d.victim.name
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tables := c.WatchTable(wctx)
	tick := time.NewTicker(50 * time.Millisecond) // the auditor lease is not in the shard table
	defer tick.Stop()
	for len(d.moved) < len(d.frozen) || !auditorMoved {
		select {
		case <-ctx.Done():
			return errors.New("timed out waiting for the shards to move")
		case <-tables:
		case <-tick.C:
		}
		for _, z := range d.frozen {
			d.checkMoved(c, z)
		}
		if h, ok := c.Holder(auditorLease); ok && !auditorMoved && h.Token > d.auditor.Token {
			auditorMoved = true
			d.p.say("lease %s:\t%s token %d\t→ %s token %d\tafter %s", auditorLease, d.auditor.Node,
				d.auditor.Token, h.Node, h.Token, round(time.Since(d.pausedAt)))
		}
	}
	d.p.flush()
	d.beliefs()
	return d.waitFenced(ctx)
}

// checkMoved prints z's shard once it has a new owner.
func (d *demo) checkMoved(c *coordinator.Coordinator, z *zombie) {
	s := z.lease.Shard()
	if _, done := d.moved[s]; done {
		return
	}
	sh, ok := c.Table().Shard(s)
	o := sh.Owner
	if !ok || sh.State != coordinator.ShardOwned || o.Token <= z.lease.Token() {
		return
	}
	d.moved[s] = o
	if d.firstMove.IsZero() {
		d.firstMove = time.Now()
	}
	d.p.say("shard %d:\t%s token %d\t→ %s token %d\tafter %s", s, d.victim.name, z.lease.Token(),
		o.Node, o.Token, round(time.Since(d.pausedAt)))
}

// beliefs says when the paused node stopped believing it owned the shards:
// by its own clock, before the leader could give them away (holdfast's
// promise). The stopped workers do not know; that is why the resource
// needs the token.
func (d *demo) beliefs() {
	var last time.Time
	for _, z := range d.frozen {
		t := z.endedAt()
		if t.IsZero() {
			d.p.say("%s still believes it owns shard %d!", d.victim.name, z.lease.Shard())
			return
		}
		if t.After(last) {
			last = t
		}
	}
	when := "before any shard moved"
	if !last.Before(d.firstMove) {
		when = "NOT before the first shard moved, " + round(d.firstMove.Sub(d.pausedAt)) + " after the pause!"
	}
	d.p.say("%s's own timer had ended its leases %s after the pause, %s;",
		d.victim.name, round(last.Sub(d.pausedAt)), when)
	d.p.say("but its stopped workers cannot look at a timer: they still hold their old tokens.")
}

// waitFenced waits until each new owner has written once, so the shard's
// fence holds the new token. Before that, a zombie's write would still be
// accepted: it would be the last write of the old token, not a stale one.
func (d *demo) waitFenced(ctx context.Context) error {
	led := d.leader.led
	return poll(ctx, "the new owners write", func() bool {
		for s, o := range d.moved {
			if f, err := led.fenceOf(ctx, int64(s)); err != nil || f < o.Token {
				return false
			}
		}
		return true
	})
}

// resume restarts the victim: its workers write with their old tokens.
func (d *demo) resume(ctx context.Context) error {
	v := d.victim
	d.p.section(fmt.Sprintf("4. %s resumes after %s; its workers write with their old tokens", v.name, round(time.Since(d.pausedAt))))
	v.net.resume()
	v.frz.thaw() // each zombie makes its write; thaw returns once all did
	for _, z := range d.frozen {
		s, tok := z.lease.Shard(), z.lease.Token()
		if f, ok := asFenced(z.err); ok {
			d.p.say("%s's write to shard %d with token %d rejected: shard fenced at %d", v.name, s, tok, f.Highest)
		} else if z.err == nil {
			d.p.say("%s's write to shard %d with token %d ACCEPTED", v.name, s, tok)
		} else {
			d.p.say("%s's write to shard %d with token %d failed: %v", v.name, s, tok, z.err)
		}
	}
	z := d.frozen[0]
	d.p.say("\n%s itself knows: the context of each of its %s ended (%v),",
		v.name, plural(len(d.frozen), "shard lease"), context.Cause(z.lease.Context()))
	d.p.say("and Checkpoint fails: %v", z.lease.Checkpoint())
	if d.auditor.Node.Name != v.name {
		return nil
	}
	// The auditor checks its lease inside its transaction, after the
	// write lock: it finds out before writing anything.
	err := poll(ctx, v.name+"'s auditor notices", func() bool { return v.aud.lostWith() != nil })
	if err == nil {
		d.p.say("Its auditor checks its lease inside its transaction, so it wrote nothing: %v", v.aud.lostWith())
	}
	return err
}

// rejoin waits until the resumed node, with a new session, owns shards
// again: the leader hands some back to it, each with a new token.
func (d *demo) rejoin(ctx context.Context) error {
	v := d.victim
	d.p.section(fmt.Sprintf("5. %s rejoins with a new session", v.name))
	resumed := time.Now()
	if err := stable(ctx, d.leader.c, d.nodes, 500*time.Millisecond); err != nil {
		return err
	}
	d.p.say("%s opened a new session; %s after it resumed, the leader had handed it %s",
		v.name, round(time.Since(resumed)), plural(len(v.c.Owned()), "shard"))
	d.p.say("(a new session waits %v before it gets any). Every grant draws a new token,",
		coordinator.DefaultLocalConfig().Shards.JoinStabilization)
	d.p.say("larger than every token granted before it:\n")
	d.p.shardTable(d.leader.c)
	return nil
}

// finish shuts every node down gracefully and checks the ledger file.
func (d *demo) finish(ctx context.Context) error {
	d.p.section("6. Every node shuts down gracefully, handing its shards off first")
	leader := raftLeader(d.nodes)
	if leader == nil {
		leader = d.leader
	}
	if err := shutdown(d.o, d.nodes, leader, d.p.say); err != nil {
		return err
	}
	d.p.flush()
	t, err := d.leader.led.totals(ctx)
	if err != nil {
		return err
	}
	d.p.say("\nledger.db: %d writes accepted, %d stale writes rejected, %d stale writes accepted",
		t.accepted, t.rejected, t.stale)
	d.p.say("auditor: %d audits recorded under %s, the most stale writes any found: %d",
		t.audits, plural(t.auditors, "token"), t.found)
	d.p.say("done in %s", round(time.Since(d.start)))
	d.p.flush()
	if t.stale > 0 || t.found > 0 {
		return fmt.Errorf("the ledger accepted %d writes with a stale token", t.stale)
	}
	return nil
}
