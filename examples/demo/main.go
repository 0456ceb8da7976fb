// Command demo forms a holdfast cluster of a few nodes on loopback in one
// process, prints its members and leader, kills the leader, shows a new one
// take over with the state intact, and shuts down gracefully.
//
//	go run ./examples/demo [-nodes 3] [-shards 16]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	nodes := fs.Int("nodes", 3, "number of nodes (3 or 5 form voters; more join as non-voters)")
	shards := fs.Int("shards", 16, "shard count recorded when the cluster is created")
	timeout := fs.Duration("timeout", 60*time.Second, "give up if the cluster has not formed by then")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nodes < 1 {
		return errors.New("-nodes must be at least 1")
	}
	dir, err := os.MkdirTemp("", "holdfast-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	voters := 3
	if *nodes < 3 {
		voters = 1
	}
	var cs []*coordinator.Coordinator
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	fmt.Fprintf(out, "starting %d nodes on loopback (%d voters, %d shards)\n", *nodes, voters, *shards)
	for i := 0; i < *nodes; i++ {
		cfg := coordinator.DefaultLocalConfig()
		cfg.NodeName = fmt.Sprintf("node%d", i)
		cfg.DataDir = filepath.Join(dir, cfg.NodeName)
		cfg.Voters, cfg.BootstrapExpect, cfg.Shards = voters, voters, *shards
		if i > 0 {
			cfg.Join = []string{cs[0].GossipAddr()}
		}
		c, err := coordinator.New(cfg)
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	leader, err := waitLeader(cs, *timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\ncluster %s formed; leader is %s\n\n", leader.ClusterID(), leader.NodeName())
	printMembers(out, leader)
	if len(cs) < 3 {
		return shutdown(out, cs)
	}
	fmt.Fprintf(out, "\nkilling the leader %s (no goodbye, as a crash)\n", leader.NodeName())
	leader.Close()
	var rest []*coordinator.Coordinator
	for _, c := range cs {
		if c != leader {
			rest = append(rest, c)
		}
	}
	cs = rest
	next, err := waitLeader(cs, *timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "new leader %s, same cluster %s, replica at index %d\n",
		next.NodeName(), next.ClusterID(), next.AppliedIndex())
	waitGossipFailed(next, leader.NodeName(), *timeout)
	deadID := leader.ID()
	if waitVoterRemoved(next, deadID, *timeout) {
		fmt.Fprintf(out, "autopilot removed the dead voter %s from the raft configuration\n", leader.NodeName())
	}
	fmt.Fprintln(out)
	printMembers(out, next)
	return shutdown(out, cs)
}

// waitLeader polls until one node leads and every node has the cluster ID.
func waitLeader(cs []*coordinator.Coordinator, timeout time.Duration) (*coordinator.Coordinator, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var leader *coordinator.Coordinator
		ready := true
		for _, c := range cs {
			if c.RaftState() == coordinator.StateLeader {
				leader = c
			}
			ready = ready && c.ClusterID() != ""
		}
		if leader != nil && ready {
			return leader, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("no leader after %v", timeout)
}

// waitGossipFailed waits (bounded) until gossip on c reports name failed.
func waitGossipFailed(c *coordinator.Coordinator, name string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, m := range c.Members() {
			if m.Name == name && m.State != coordinator.MemberAlive {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitVoterRemoved waits (bounded) until id is no longer a voter.
func waitVoterRemoved(c *coordinator.Coordinator, id string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		found := false
		for _, v := range c.Voters() {
			found = found || v == id
		}
		if !found {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func printMembers(out io.Writer, c *coordinator.Coordinator) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tRAFT\tRPC ADDRESS")
	for _, m := range c.Members() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, m.State, m.Suffrage, m.RPCAddr)
	}
	tw.Flush()
}

func shutdown(out io.Writer, cs []*coordinator.Coordinator) error {
	fmt.Fprintln(out, "\nshutting down gracefully")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range cs {
		if err := c.Shutdown(ctx); err != nil {
			fmt.Fprintf(out, "  %s: %v\n", c.NodeName(), err)
		}
	}
	fmt.Fprintln(out, "done")
	return nil
}
