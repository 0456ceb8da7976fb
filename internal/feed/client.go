package feed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/pause"
)

// ClientOptions are a replica's view of its node. Every field without a
// stated default is required.
type ClientOptions struct {
	Name string // this node's name (sent with each pull, and the rendezvous key)
	// Replica is the node's state machine, which only the client applies
	// to (the node is in no raft configuration).
	Replica *fsm.FSM
	// Servers returns the nodes that may serve the feed now.
	Servers func() []Peer
	// Call sends req to method at addr and decodes the answer into rep.
	Call func(ctx context.Context, addr, method string, req, rep any) error
	// Leader is told the leader each reply names ("" when the server knows
	// none); the node lets what it was told expire when no reply renews it.
	Leader func(addr, id string)
	// MaxWait is the servers' MaxWait (default DefaultMaxWait); a pull
	// gives up after MaxWait plus RPCTimeout.
	MaxWait, RPCTimeout time.Duration
	// Retry is how long a server that failed is passed over (default 1s).
	Retry time.Duration
	// Log receives the client's logs; nil discards them.
	Log *slog.Logger
	// InRaft reports whether the node is in a raft configuration after
	// all (raft then feeds its replica, and the client pulls nothing);
	// nil: never.
	InRaft func() bool
}

// Client keeps a replica fed: Run pulls until its context ends.
type Client struct {
	o      ClientOptions
	server atomic.Pointer[string] // the server of the last pull that succeeded
	snaps  atomic.Int64
}

// NewClient returns a client over o.
func NewClient(o ClientOptions) *Client {
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.InRaft == nil {
		o.InRaft = func() bool { return false }
	}
	return &Client{o: o}
}

// Server returns the ID of the server the replica last pulled from ("" before the first).
func (c *Client) Server() string {
	if p := c.server.Load(); p != nil {
		return *p
	}
	return ""
}

// Snapshots counts the snapshots the replica restored.
func (c *Client) Snapshots() int64 { return c.snaps.Load() }

// Run pulls from the first server in rendezvous order that has not failed
// within Retry, applies what it gets, and moves to the next server when a
// pull fails, until ctx ends. When every server failed within Retry (a
// cluster still forming, a partition), it waits about Retry before it
// tries again, so that a few hundred replicas starting at once cost the
// servers a few hundred small requests a second, not a storm.
func (c *Client) Run(ctx context.Context) {
	failed := map[string]time.Time{}
	leaderID := ""
	for ctx.Err() == nil {
		if c.o.InRaft() {
			if !pause.For(ctx, c.o.Retry) {
				return
			}
			continue
		}
		p, ok := c.pick(leaderID, failed)
		if !ok {
			// The leader hint is left to expire on its own: a server that
			// stops serving for a moment (an election) must not cost the
			// node its leader, and with it its keepalives.
			if !pause.For(ctx, pause.Jitter(c.o.Retry)) {
				return
			}
			continue
		}
		id, err := c.follow(ctx, p)
		if ctx.Err() != nil {
			return
		}
		if id != "" {
			leaderID = id
		}
		if err != nil {
			failed[p.ID] = time.Now()
			c.o.Log.Debug("replica feed: server failed; trying the next", "server", p.ID, "error", err)
		}
	}
}

// pick returns the first server by rendezvous order not failed within Retry.
func (c *Client) pick(leaderID string, failed map[string]time.Time) (Peer, bool) {
	now := time.Now()
	for _, p := range Order(c.o.Name, leaderID, c.o.Servers()) {
		if t, bad := failed[p.ID]; bad && now.Sub(t) < c.o.Retry {
			continue
		}
		delete(failed, p.ID)
		return p, true
	}
	return Peer{}, false
}

// follow pulls from p until a pull fails, or the leader p names moves p
// down the order (another server should carry this replica); it returns
// the leader's ID as last heard.
func (c *Client) follow(ctx context.Context, p Peer) (string, error) {
	for {
		rep, err := c.pull(ctx, p, PullRequest{Name: c.o.Name, From: c.o.Replica.View().Index()})
		if err != nil {
			return "", err
		}
		c.server.Store(&p.ID)
		c.o.Leader(rep.LeaderAddr, rep.LeaderID)
		if rep.Snap != nil {
			if err := c.restore(ctx, p, rep.Snap); err != nil {
				return rep.LeaderID, err
			}
		}
		c.apply(rep.Entries)
		if c.o.InRaft() || rep.LeaderID == p.ID && len(c.o.Servers()) > 1 {
			return rep.LeaderID, nil // re-pick: a follower serves while one is up
		}
	}
}

func (c *Client) pull(ctx context.Context, p Peer, req PullRequest) (PullReply, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.MaxWait+c.o.RPCTimeout)
	defer cancel()
	var rep PullReply
	err := c.o.Call(ctx, p.Addr, Method, req, &rep)
	return rep, err
}

// apply applies the entries above the replica's index, in order.
func (c *Client) apply(entries []Entry) {
	for _, e := range entries {
		if e.Index <= c.o.Replica.View().Index() {
			continue // never backwards
		}
		c.o.Replica.Apply(&raft.Log{Index: e.Index, Term: e.Term, Type: raft.LogCommand, Data: e.Data})
	}
}

// restore reads the snapshot whose first chunk is first from p and
// restores it when it is past the replica's index.
func (c *Client) restore(ctx context.Context, p Peer, first *SnapChunk) error {
	if first.Total > fsm.MaxSnapshotSize {
		return fmt.Errorf("feed: snapshot of %d bytes", first.Total)
	}
	buf := make([]byte, 0, first.Total)
	ch := first
	for {
		if ch.Index != first.Index || ch.Offset != uint64(len(buf)) || len(ch.Data) == 0 && uint64(len(buf)) < first.Total {
			return errors.New("feed: snapshot chunk out of order")
		}
		buf = append(buf, ch.Data...)
		if uint64(len(buf)) >= first.Total {
			break
		}
		rep, err := c.pull(ctx, p, PullRequest{Name: c.o.Name, SnapIndex: first.Index, SnapOffset: uint64(len(buf))})
		if err != nil {
			return err
		}
		if rep.Snap == nil {
			return errors.New("feed: snapshot chunk missing")
		}
		ch = rep.Snap
	}
	if first.Index <= c.o.Replica.View().Index() {
		return nil // never backwards
	}
	if err := c.o.Replica.Restore(io.NopCloser(bytes.NewReader(buf))); err != nil {
		return err
	}
	c.snaps.Add(1)
	c.o.Log.Info("replica feed: restored a snapshot", "server", p.ID, "index", first.Index, "bytes", len(buf))
	return nil
}
