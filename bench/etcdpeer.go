package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// etcd's side of workloads 1 to 5: concurrency.Mutex for the acquire
// rows, concurrency.Election for failover and handoff, Get for the lookup
// (etcdCluster implements peer).

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

// acquireRelease runs Mutex Lock + Unlock on one key by clients
// contenders, each with its own client and session.
func (e *etcdCluster) acquireRelease(clients int, d time.Duration, key string) (opsResult, error) {
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

// handoffs measures n graceful handoffs of an Election between two
// sessions: Resign of the holder, until the waiter's Campaign returns.
func (e *etcdCluster) handoffs(n int, prefix string) (latencies, error) {
	s, err := openEtcdSessions(e, 2)
	if err != nil {
		return nil, err
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(n)*5*time.Second+30*time.Second)
	defer cancel()
	holder := concurrency.NewElection(s.sessions[0], prefix)
	waiter := concurrency.NewElection(s.sessions[1], prefix)
	return measureHandoffs(n, handoffSide{
		hold:    func() error { return holder.Campaign(ctx, "holder") },
		wait:    func() error { return waiter.Campaign(ctx, "waiter") },
		queued:  etcdCandidates(ctx, s.clients[0], prefix, 2),
		release: func() error { return holder.Resign(ctx) },
		done:    func() error { return waiter.Resign(ctx) },
	})
}

// failover measures one failover of an Election: the holder's session
// (TTL 2 s, its own client) wins, the waiter's session campaigns, and the
// holder's client is closed without revoking the session's lease (its
// keepalives stop, as when the process dies).
func (e *etcdCluster) failover(prefix string) (time.Duration, error) {
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
	waiter := concurrency.NewElection(ws.sessions[0], prefix)
	return measureFailover(failoverSide{
		hold:   func() error { return holder.Campaign(ctx, "holder") },
		wait:   func() error { return waiter.Campaign(ctx, "waiter") },
		queued: etcdCandidates(ctx, ws.clients[0], prefix, 2),
		kill:   func() { holderCli.Close() }, // no Revoke: the lease expires on the server
		done:   func() error { return waiter.Resign(ctx) },
	})
}

// etcdPut writes key/value pairs in transactions of 128 puts (etcd's
// default limit).
func etcdPut(cli *clientv3.Client, n int, kv func(i int) (string, string)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ops []clientv3.Op
	for i := 0; i < n; i++ {
		k, v := kv(i)
		ops = append(ops, clientv3.OpPut(k, v))
		if len(ops) == 128 || i == n-1 {
			if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
				return err
			}
			ops = ops[:0]
		}
	}
	return nil
}

// loadShards writes one key per shard holding its owner as c's table
// shows it, and keeps a client for the lookups.
func (e *etcdCluster) loadShards(c *coordinator.Coordinator, shards int) error {
	if e.reader == nil {
		cli, err := e.client()
		if err != nil {
			return err
		}
		e.reader = cli
	}
	vals := shardValues(c, shards)
	return etcdPut(e.reader, shards, func(i int) (string, string) { return shardKey(i), vals[i] })
}

// lookup times Gets of a shard's key: linearizable (fresh) or
// serializable (answered by the member the client reached without
// consulting the leader).
func (e *etcdCluster) lookup(shards int, d time.Duration, fresh bool) (float64, latencies, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	var opts []clientv3.OpOption
	if !fresh {
		opts = append(opts, clientv3.WithSerializable())
	}
	return timeReads(shards, d, func(s int) error {
		r, err := e.reader.Get(ctx, shardKey(s), opts...)
		if err == nil && len(r.Kvs) != 1 {
			err = fmt.Errorf("shard key %d missing", s)
		}
		return err
	})
}

// memEtcd starts replicas etcd members, each in its own child, loads one
// key per shard and holds memLeases mutexes, each on its own session (a
// lease with keepalives), from this process, and measures each member.
func memEtcd(replicas int) ([]memStats, error) {
	dir, err := os.MkdirTemp("", "etcd-mem-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ports, err := freePorts(2 * replicas)
	if err != nil {
		return nil, err
	}
	var cs []*child
	defer func() { stopAll(cs) }()
	e := &etcdCluster{}
	for i := 0; i < replicas; i++ {
		c, err := spawn("-child", "etcd", "-child-index", strconv.Itoa(i), "-child-n", strconv.Itoa(replicas),
			"-child-dir", dir, "-child-ports", joinInts(ports))
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
		e.endpoints = append(e.endpoints, fmt.Sprintf("127.0.0.1:%d", ports[replicas+i]))
	}
	for _, c := range cs {
		if _, err := c.expect("READY", 60*time.Second); err != nil {
			return nil, err
		}
	}
	cli, err := e.client()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	if err := etcdPut(cli, memShards, func(s int) (string, string) { return shardKey(s), memOwnerValue(s) }); err != nil {
		return nil, err
	}
	var sessions []*concurrency.Session
	defer func() {
		for _, s := range sessions {
			s.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < memLeases; i++ {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(int(sessionTTL/time.Second)))
		if err != nil {
			return nil, err
		}
		sessions = append(sessions, s)
		if err := concurrency.NewMutex(s, fmt.Sprintf("/holdfast-bench/leases/%03d", i)).Lock(ctx); err != nil {
			return nil, err
		}
	}
	time.Sleep(memSettle)
	return measureAll(cs)
}
