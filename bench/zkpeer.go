package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/holdfast-go/holdfast/coordinator"
)

// ZooKeeper's side of workloads 1 to 6: go-zookeeper's lock recipe
// (zk.Lock: an ephemeral sequential child per contender, each watching the
// one ahead of it) for the acquire, failover and handoff rows; getData,
// with and without a sync first, for the lookup (zkCluster implements
// peer).

var zkACL = zk.WorldACL(zk.PermAll)

// zkConns opens n sessions, client i on server order[i%n].
func (z *zkCluster) zkConns(n int) ([]*zkConn, error) {
	var out []*zkConn
	for i := 0; i < n; i++ {
		c, err := z.conn(i)
		if err != nil {
			closeZK(out)
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func closeZK(cs []*zkConn) {
	for _, c := range cs {
		c.close()
	}
}

// guard closes cs if the workload is not done within d (the lock recipe
// takes no context; a closed session ends a blocked Lock with an error).
// The returned stop ends the guard.
func guard(cs []*zkConn, d time.Duration) (stop func() bool) {
	return time.AfterFunc(d, func() {
		for _, c := range cs {
			c.kill()
		}
	}).Stop
}

// acquireRelease runs Lock + Unlock of key's lock by clients contenders,
// each with its own session.
func (z *zkCluster) acquireRelease(clients int, d time.Duration, key string) (opsResult, error) {
	cs, err := z.zkConns(clients)
	if err != nil {
		return opsResult{}, err
	}
	defer closeZK(cs)
	defer guard(cs, d+30*time.Second)()
	locks := make([]*zk.Lock, clients)
	for i := range locks {
		locks[i] = zk.NewLock(cs[i].Conn, key, zkACL)
	}
	return loop(clients, d, func(i int) error {
		if err := locks[i].Lock(); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if err := locks[i].Unlock(); err != nil {
			return fmt.Errorf("unlock: %w", err)
		}
		return nil
	})
}

// zkContenders reports nil once key's lock has want children (holder plus
// queued waiters).
func zkContenders(c *zkConn, key string, want int) func() error {
	return func() error {
		kids, _, err := c.Children(key)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if len(kids) < want {
			return fmt.Errorf("%w: %d contenders", errNotYet, len(kids))
		}
		return nil
	}
}

// handoffs measures n graceful handoffs of key's lock between two
// sessions: Unlock of the holder, until the waiter's Lock returns.
func (z *zkCluster) handoffs(n int, key string) (latencies, error) {
	cs, err := z.zkConns(2)
	if err != nil {
		return nil, err
	}
	defer closeZK(cs)
	defer guard(cs, time.Duration(n)*5*time.Second+30*time.Second)()
	holder, waiter := zk.NewLock(cs[0].Conn, key, zkACL), zk.NewLock(cs[1].Conn, key, zkACL)
	return measureHandoffs(n, handoffSide{
		hold:    holder.Lock,
		wait:    waiter.Lock,
		queued:  zkContenders(cs[0], key, 2),
		release: holder.Unlock,
		done:    waiter.Unlock,
	})
}

// failover measures one failover of key's lock: the holder's session
// (timeout 2 s, its own connection) is cut off without closing it, so
// its ephemeral node goes only when the servers expire the session.
func (z *zkCluster) failover(key string) (time.Duration, error) {
	cs, err := z.zkConns(2)
	if err != nil {
		return 0, err
	}
	defer closeZK(cs)
	defer guard(cs, 60*time.Second)()
	holder, waiter := zk.NewLock(cs[0].Conn, key, zkACL), zk.NewLock(cs[1].Conn, key, zkACL)
	return measureFailover(failoverSide{
		hold:   holder.Lock,
		wait:   waiter.Lock,
		queued: zkContenders(cs[1], key, 2),
		kill:   cs[0].kill,
		done:   waiter.Unlock,
	})
}

// zkCreate creates n znodes (path, data) in multi requests of 128.
func zkCreate(c *zk.Conn, n int, node func(i int) (string, string)) error {
	var ops []any
	for i := 0; i < n; i++ {
		p, v := node(i)
		ops = append(ops, &zk.CreateRequest{Path: p, Data: []byte(v), Acl: zkACL})
		if len(ops) == 128 || i == n-1 {
			if _, err := c.Multi(ops...); err != nil {
				return err
			}
			ops = ops[:0]
		}
	}
	return nil
}

// loadShards creates one znode per shard holding its owner as c's table
// shows it, and keeps a session (on a follower when there is one) for the
// lookups.
func (z *zkCluster) loadShards(c *coordinator.Coordinator, shards int) error {
	if z.reader == nil {
		r, err := z.conn(0)
		if err != nil {
			return err
		}
		z.reader = r
	}
	if err := zkEnsure(z.reader.Conn, strings.TrimSuffix(shardPrefix, "/")); err != nil {
		return err
	}
	vals := shardValues(c, shards)
	return zkCreate(z.reader.Conn, shards, func(i int) (string, string) { return shardKey(i), vals[i] })
}

// lookup times getData of a shard's znode; a fresh read sends a sync
// first, which makes the server catch up with the leader (ZooKeeper's way
// to read what was committed before; the server answers reads from its
// local copy otherwise).
func (z *zkCluster) lookup(shards int, d time.Duration, fresh bool) (float64, latencies, error) {
	c := z.reader.Conn
	return timeReads(shards, d, func(s int) error {
		if fresh {
			if _, err := c.Sync(shardKey(s)); err != nil {
				return err
			}
		}
		b, _, err := c.Get(shardKey(s))
		if err == nil && len(b) == 0 {
			err = fmt.Errorf("shard znode %d empty", s)
		}
		return err
	})
}

// memZK starts replicas ZooKeeper servers (each its own JVM), creates one
// znode per shard and holds memLeases locks, each on its own session
// (spread over the servers), from this process, and reads each server's
// RSS.
func memZK(replicas int) ([]memStats, error) {
	z, err := startZK(replicas, 90*time.Second)
	if err != nil {
		return nil, err
	}
	defer z.close()
	cs, err := z.zkConns(memLeases)
	if err != nil {
		return nil, err
	}
	defer closeZK(cs)
	if err := zkEnsure(cs[0].Conn, strings.TrimSuffix(shardPrefix, "/")); err != nil {
		return nil, err
	}
	if err := zkCreate(cs[0].Conn, memShards, func(s int) (string, string) { return shardKey(s), memOwnerValue(s) }); err != nil {
		return nil, err
	}
	for i, c := range cs {
		if err := zk.NewLock(c.Conn, fmt.Sprintf("/holdfast-bench/leases/%03d", i), zkACL).Lock(); err != nil {
			return nil, err
		}
	}
	time.Sleep(memSettle)
	var out []memStats
	for _, s := range z.servers {
		m := procStatus(strconv.Itoa(s.cmd.Process.Pid))
		if m.RSSKiB == 0 {
			return nil, fmt.Errorf("no VmRSS for ZooKeeper server %s", s.client)
		}
		m.JVM = true
		out = append(out, m)
	}
	return out, nil
}
