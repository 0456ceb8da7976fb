package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"
)

// phase sleeps a random fraction of a keepalive interval (TTL/3), so that
// the kill lands at a random point of the holder's keepalive cycle on both
// systems.
func phase() { time.Sleep(rand.N(sessionTTL / 3)) }

// hfFailover measures one failover of name: a fresh non-voter node (no
// data dir, drained of shards so that no shard moves during the
// measurement) takes the lease, waiter queues for it, the holder's
// coordinator is closed at once (a crash: no resign, no session close, no
// leave), and the time runs until the waiter's Acquire returns.
func hfFailover(h *hfCluster, waiter *hfNode, name string) (time.Duration, error) {
	x, err := h.add(false)
	if err != nil {
		return 0, err
	}
	defer h.kill(x)
	if err := poll(30*time.Second, x.c.Ready); err != nil {
		return 0, fmt.Errorf("holder node: %w", err)
	}
	if err := drainNode(x, 10*time.Second); err != nil {
		return 0, fmt.Errorf("draining the holder node: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := x.c.Acquire(ctx, name); err != nil {
		return 0, fmt.Errorf("holder campaign: %w", err)
	}
	ch := campaignAsync(ctx, waiter.c, name)
	if err := poll(10*time.Second, waiterQueued(waiter.c, name)); err != nil {
		return 0, err
	}
	phase()
	t0 := time.Now()
	h.kill(x)
	g := <-ch
	if g.err != nil {
		return 0, fmt.Errorf("waiter campaign: %w", g.err)
	}
	d := g.at.Sub(t0)
	return d, g.l.Release(ctx)
}

// etcdFailover measures one failover of an Election: the holder's session
// (TTL 2 s, its own client) wins, the waiter's session campaigns, the
// holder's client is closed without revoking the session's lease (its
// keepalives stop, as when the process dies), and the time runs until the
// waiter's Campaign returns.
func etcdFailover(e *etcdCluster, prefix string) (time.Duration, error) {
	holderCli, err := e.client()
	if err != nil {
		return 0, err
	}
	defer holderCli.Close()
	hs, err := concurrency.NewSession(holderCli, concurrency.WithTTL(int(sessionTTL/time.Second)))
	if err != nil {
		return 0, err
	}
	ws, err := openEtcdSessions(e, 1)
	if err != nil {
		return 0, err
	}
	defer ws.close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	holder := concurrency.NewElection(hs, prefix)
	if err := holder.Campaign(ctx, "holder"); err != nil {
		return 0, fmt.Errorf("holder campaign: %w", err)
	}
	waiter := concurrency.NewElection(ws.sessions[0], prefix)
	ch := etcdCampaignAsync(ctx, waiter, "waiter")
	if err := poll(10*time.Second, etcdCandidates(ctx, ws.clients[0], prefix, 2)); err != nil {
		return 0, err
	}
	phase()
	t0 := time.Now()
	holderCli.Close() // no Revoke: the lease expires on the server
	g := <-ch
	if g.err != nil {
		return 0, fmt.Errorf("waiter campaign: %w", g.err)
	}
	d := g.at.Sub(t0)
	return d, waiter.Resign(ctx)
}
