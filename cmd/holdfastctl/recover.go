package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/raftnode"
	"github.com/holdfast-go/holdfast/transport"
)

// runOffline runs `holdfastctl data peers|recover ...` (sub) with the
// arguments after the subcommand and returns the exit status.
func runOffline(sub string, args []string, stdout, stderr io.Writer) int {
	o, err := parseDataFlags(sub, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, dataUsage)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "holdfastctl: data %s: %v\n", sub, err)
		fmt.Fprint(stderr, dataUsage)
		return 2
	}
	if sub == "peers" {
		err = peers(o, stdout)
	} else {
		err = recoverDir(o, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "holdfastctl: data %s: %v\n", sub, err)
		return 1
	}
	return 0
}

// dataOptions are the flags and the directory of a data command.
type dataOptions struct {
	dir, confirm string
	keep         []string
	json         bool
}

// parseDataFlags parses flags before and after DIR.
func parseDataFlags(sub string, args []string) (dataOptions, error) {
	var o dataOptions
	var keep string
	fs := flag.NewFlagSet("data "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if sub == "peers" {
		fs.BoolVar(&o.json, "json", false, "print JSON")
	} else {
		fs.StringVar(&o.confirm, "confirm", "", "the node name recorded in DIR")
		fs.StringVar(&keep, "keep", "", "the surviving voters' IDs")
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() == 0 {
		return o, errors.New("missing DIR")
	}
	o.dir = fs.Arg(0)
	if err := fs.Parse(fs.Args()[1:]); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q after DIR", fs.Arg(0))
	case sub == "recover" && o.confirm == "":
		return o, errors.New("recover rewrites the raft configuration: give -confirm NAME, the node name recorded in DIR (data peers shows it)")
	}
	for _, id := range strings.Split(keep, ",") {
		if id = strings.TrimSpace(id); id != "" {
			o.keep = append(o.keep, id)
		}
	}
	return o, nil
}

// openData opens a stopped node's data dir, explaining the refusals.
func openData(dir string) (*raftnode.Offline, error) {
	o, err := raftnode.OpenOffline(dir)
	switch {
	case errors.Is(err, raftnode.ErrDataDirLocked):
		return nil, fmt.Errorf("a node is running on %s (%s is locked): stop it first; these commands read and rewrite its raft state offline",
			dir, filepath.Join(dir, "raft", "LOCK"))
	case err != nil:
		return nil, err
	}
	return o, nil
}

// peerRow is one server of the configuration, as peers prints it.
type peerRow struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	Suffrage string `json:"suffrage"`
	Self     bool   `json:"self"`
}

// peersDoc is peers' JSON document.
type peersDoc struct {
	DataDir       string    `json:"data_dir"`
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	LastIndex     uint64    `json:"last_index"`
	LastTerm      uint64    `json:"last_term"`
	SnapshotIndex uint64    `json:"snapshot_index"`
	CurrentTerm   uint64    `json:"current_term"`
	Servers       []peerRow `json:"servers"`
}

func peers(o dataOptions, w io.Writer) error {
	d, err := openData(o.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	rs, err := d.State()
	if err != nil {
		return err
	}
	doc := peersDoc{DataDir: o.dir, ID: d.ID, Name: d.Name, LastIndex: rs.LastIndex, LastTerm: rs.LastTerm,
		SnapshotIndex: rs.SnapshotIndex, CurrentTerm: rs.CurrentTerm, Servers: peerRows(rs.Configuration, d.ID)}
	if o.json {
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "data dir\t%s\n", doc.DataDir)
	fmt.Fprintf(tw, "node\t%s (id %s)\n", orDash(doc.Name), doc.ID)
	fmt.Fprintf(tw, "raft log\tlast index %d, term %d; snapshot at %d; current term %d\n",
		doc.LastIndex, doc.LastTerm, doc.SnapshotIndex, doc.CurrentTerm)
	fmt.Fprintf(tw, "configuration\t%d servers (the latest in the log, committed or not)\n\n", len(doc.Servers))
	fmt.Fprintln(tw, "ID\tSUFFRAGE\tRPC ADDRESS\t")
	for _, r := range doc.Servers {
		self := ""
		if r.Self {
			self = "this node"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Suffrage, r.Address, self)
	}
	return tw.Flush()
}

// peerRows describes a configuration's servers; self is this node's ID.
func peerRows(c raft.Configuration, self string) []peerRow {
	rows := make([]peerRow, 0, len(c.Servers))
	for _, s := range c.Servers {
		addr, _, err := transport.SplitRaftAddress(s.Address)
		if err != nil {
			addr = string(s.Address)
		}
		suffrage := "voter"
		if s.Suffrage != raft.Voter {
			suffrage = "non-voter"
		}
		rows = append(rows, peerRow{ID: string(s.ID), Address: addr, Suffrage: suffrage, Self: string(s.ID) == self})
	}
	return rows
}

func recoverDir(o dataOptions, w io.Writer) error {
	d, err := openData(o.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if want := cmp.Or(d.Name, d.ID); o.confirm != want {
		return fmt.Errorf("-confirm %q does not name the node of %s, %q: nothing done", o.confirm, o.dir, want)
	}
	rs, err := d.State()
	if err != nil {
		return err
	}
	servers, err := raftnode.PlanRecovery(rs, d.ID, o.keep)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "data dir %s, node %s (id %s): log up to index %d, term %d\n", o.dir, orDash(d.Name), d.ID, rs.LastIndex, rs.LastTerm)
	fmt.Fprintf(w, "configuration before: %s\n", raftnode.DescribeConfiguration(rs.Configuration))
	if err := d.Recover(servers, fsm.New()); err != nil {
		return err
	}
	after, err := d.State()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "configuration now:    %s\n", raftnode.DescribeConfiguration(after.Configuration))
	fmt.Fprintf(w, "the replicated state up to index %d is kept as a snapshot: tokens continue from where they were.\n", after.SnapshotIndex)
	if len(servers) > 1 {
		fmt.Fprintln(w, "Run the same recover, with the same -keep, on every other survivor's data dir before starting any of them.")
	}
	fmt.Fprintln(w, "Next: start the node; it leads alone (or with the other survivors). Start new nodes with -join: they are\n"+
		"added and promoted to voters. The lost nodes' sessions expire; their leases and shards pass to live nodes.\n"+
		"Never start a lost node with its old data dir: wipe it, and it joins as a new node.")
	return nil
}

// orDash is s, or "-" when empty.
func orDash(s string) string { return cmp.Or(s, "-") }
