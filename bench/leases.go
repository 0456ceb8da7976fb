package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// sessionTTL is the session TTL of every lease workload, on both systems
// (holdfast: benchConfig; etcd: concurrency.WithTTL).
const sessionTTL = 2 * time.Second

// opsResult is one round of an acquire + release loop.
type opsResult struct {
	ops     int
	elapsed time.Duration
	lat     latencies
}

func (r opsResult) perSecond() float64 { return float64(r.ops) / r.elapsed.Seconds() }

// loop runs clients goroutines, each calling op until d has passed (an
// operation started before the deadline completes), and gathers the
// latency of every operation. op(i) runs one operation of client i.
func loop(clients int, d time.Duration, op func(i int) error) (opsResult, error) {
	var (
		mu    sync.Mutex
		all   latencies
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for i := 0; i < clients; i++ {
		wg.Go(func() {
			var mine latencies
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := op(i); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return opsResult{ops: len(all), elapsed: time.Since(start), lat: all}, first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// hfAcquireRelease runs Acquire + Release of one lease name by clients
// contenders spread over nodes (client i on nodes[i%len(nodes)]); early
// releases with ReleaseBeforeCommit, which returns before the commit and
// does not promise that others see the lease free at once (etcd's Unlock
// does: those rows are not like for like).
func hfAcquireRelease(nodes []*hfNode, clients int, d time.Duration, name string, early bool) (opsResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	return loop(clients, d, func(i int) error {
		c := nodes[i%len(nodes)].c
		l, err := c.Acquire(ctx, name)
		if err != nil {
			return fmt.Errorf("campaign: %w", err)
		}
		release := l.Release
		if early {
			release = l.ReleaseBeforeCommit
		}
		if err := release(ctx); err != nil {
			return fmt.Errorf("resign: %w", err)
		}
		return nil
	})
}

// etcdSessions opens n clients, each with one session of sessionTTL.
type etcdSessions struct {
	clients  []*clientv3.Client
	sessions []*concurrency.Session
}

func openEtcdSessions(e *etcdCluster, n int) (*etcdSessions, error) {
	s := &etcdSessions{}
	for i := 0; i < n; i++ {
		cli, err := e.client()
		if err != nil {
			s.close()
			return nil, err
		}
		s.clients = append(s.clients, cli)
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int(sessionTTL/time.Second)))
		if err != nil {
			s.close()
			return nil, err
		}
		s.sessions = append(s.sessions, sess)
	}
	return s, nil
}

// close revokes every session and closes the clients.
func (s *etcdSessions) close() {
	for _, sess := range s.sessions {
		sess.Close()
	}
	for _, c := range s.clients {
		c.Close()
	}
}

// etcdAcquireRelease runs Mutex Lock + Unlock on one key by clients
// contenders, each with its own client and session (opened before the
// timed loop).
func etcdAcquireRelease(e *etcdCluster, clients int, d time.Duration, key string) (opsResult, error) {
	s, err := openEtcdSessions(e, clients)
	if err != nil {
		return opsResult{}, err
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	mutexes := make([]*concurrency.Mutex, clients)
	for i := range mutexes {
		mutexes[i] = concurrency.NewMutex(s.sessions[i], key)
	}
	return loop(clients, d, func(i int) error {
		if err := mutexes[i].Lock(ctx); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if err := mutexes[i].Unlock(ctx); err != nil {
			return fmt.Errorf("unlock: %w", err)
		}
		return nil
	})
}

// waiterQueued reports nil once c's replica shows name held with at least
// one waiter.
func waiterQueued(c *coordinator.Coordinator, name string) func() error {
	return func() error {
		for _, l := range c.Leases() {
			if l.Name == name && l.Waiters >= 1 {
				return nil
			}
		}
		return fmt.Errorf("%w: no waiter on %s", errNotYet, name)
	}
}

// campaignAsync starts c.Acquire(name) and delivers the lease and the
// instant Acquire returned.
type grant struct {
	l   *coordinator.Lease
	at  time.Time
	err error
}

func campaignAsync(ctx context.Context, c *coordinator.Coordinator, name string) <-chan grant {
	ch := make(chan grant, 1)
	go func() {
		l, err := c.Acquire(ctx, name)
		ch <- grant{l: l, at: time.Now(), err: err}
	}()
	return ch
}

// waiterSettle is how long a queued waiter waits before the holder
// resigns in the handoff workload, on both systems. It is longer than etcd's
// 100 ms watcher sync interval: a waiter's watch that starts at the current
// revision is "unsynced" until the next sync, and a delete before then
// reaches it only at that sync. A waiter that has been waiting a while (the
// usual case of a handoff) is synced.
const waiterSettle = 200 * time.Millisecond

// hfHandoffs measures n graceful handoffs of name from holder to waiter:
// the waiter queues, the holder releases; the time is from the Release call
// until the waiter's Acquire returns.
func hfHandoffs(holder, waiter *hfNode, n int, name string) (latencies, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(n)*5*time.Second+30*time.Second)
	defer cancel()
	var out latencies
	for i := 0; i < n; i++ {
		l, err := holder.c.Acquire(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("holder campaign: %w", err)
		}
		ch := campaignAsync(ctx, waiter.c, name)
		if err := poll(10*time.Second, waiterQueued(waiter.c, name)); err != nil {
			return nil, err
		}
		time.Sleep(waiterSettle)
		t0 := time.Now()
		if err := l.Release(ctx); err != nil {
			return nil, fmt.Errorf("resign: %w", err)
		}
		g := <-ch
		if g.err != nil {
			return nil, fmt.Errorf("waiter campaign: %w", g.err)
		}
		out = append(out, g.at.Sub(t0))
		if err := g.l.Release(ctx); err != nil {
			return nil, fmt.Errorf("waiter resign: %w", err)
		}
	}
	return out, nil
}

// etcdCampaignAsync starts el.Campaign and delivers the instant it
// returned.
func etcdCampaignAsync(ctx context.Context, el *concurrency.Election, val string) <-chan grant {
	ch := make(chan grant, 1)
	go func() {
		err := el.Campaign(ctx, val)
		ch <- grant{at: time.Now(), err: err}
	}()
	return ch
}

// etcdCandidates waits until prefix has want keys (holder plus queued
// waiters).
func etcdCandidates(ctx context.Context, cli *clientv3.Client, prefix string, want int64) func() error {
	return func() error {
		r, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		if r.Count < want {
			return fmt.Errorf("%w: %d candidates", errNotYet, r.Count)
		}
		return nil
	}
}

// etcdHandoffs measures n graceful handoffs of an Election between two
// sessions: the waiter campaigns, the holder resigns; the time is from the
// Resign call until the waiter's Campaign returns.
func etcdHandoffs(e *etcdCluster, n int, prefix string) (latencies, error) {
	s, err := openEtcdSessions(e, 2)
	if err != nil {
		return nil, err
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(n)*5*time.Second+30*time.Second)
	defer cancel()
	holder := concurrency.NewElection(s.sessions[0], prefix)
	waiter := concurrency.NewElection(s.sessions[1], prefix)
	var out latencies
	for i := 0; i < n; i++ {
		if err := holder.Campaign(ctx, "holder"); err != nil {
			return nil, fmt.Errorf("holder campaign: %w", err)
		}
		ch := etcdCampaignAsync(ctx, waiter, "waiter")
		if err := poll(10*time.Second, etcdCandidates(ctx, s.clients[0], prefix, 2)); err != nil {
			return nil, err
		}
		time.Sleep(waiterSettle)
		t0 := time.Now()
		if err := holder.Resign(ctx); err != nil {
			return nil, fmt.Errorf("resign: %w", err)
		}
		g := <-ch
		if g.err != nil {
			return nil, fmt.Errorf("waiter campaign: %w", g.err)
		}
		out = append(out, g.at.Sub(t0))
		if err := waiter.Resign(ctx); err != nil {
			return nil, fmt.Errorf("waiter resign: %w", err)
		}
	}
	return out, nil
}
