package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/holdfast-go/holdfast/internal/raftnode"
)

// dataUsage is printed for a bad data command line and for data -h.
const dataUsage = `usage:
  holdfastctl data check   [-json] DIR
  holdfastctl data peers   [-json] DIR
  holdfastctl data recover [-keep ID,...] -confirm NAME DIR

Offline commands on the data dir of a STOPPED node (they refuse while a
node runs on it: its raft/LOCK is held).

check    inspects the raft data of a stopped node's data dir DIR (the node's
         -data), changing nothing: the raft log's format, segments, entries
         and terms, the current term and vote, the snapshots, what the node's
         next start would repair (a torn last write cut, a copy kept), and
         what is wrong. Exit status 1 when something is wrong: the node
         refuses to start on such a data dir. -json prints the report as JSON.
peers    the raft configuration the data dir holds (the latest in its log,
         committed or not), its last index and term, and this node's identity
recover  recovery from a lost quorum: rewrite the configuration to the
         survivors (this node alone, or the voters listed by -keep, which must
         include it), keeping the replicated state: the log is applied and kept
         as a snapshot at its last index, so tokens continue from where they
         were. Refused unless the data dir is a voter's. With several
         survivors, run it with the same -keep on each before starting any.
         Then start the node: it leads alone; new nodes that -join are added
         and promoted to voters; the lost nodes' sessions expire and their
         leases and shards pass on. Never run it while the lost nodes could
         come back with their data dirs: they would form a second majority.

-confirm  the node name recorded in DIR (peers shows it; its ID for a data
          dir without one): recover rewrites nothing unless it matches
-keep     comma-separated IDs of the surviving voters (peers lists them);
          default: this node alone
`

// dataCommands are the data subcommands: each takes its arguments and
// returns the exit status.
var dataCommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"check": runDataCheck,
	"peers": func(args []string, stdout, stderr io.Writer) int {
		return runOffline("peers", args, stdout, stderr)
	},
	"recover": func(args []string, stdout, stderr io.Writer) int {
		return runOffline("recover", args, stdout, stderr)
	},
}

// runData runs `holdfastctl data ...` and returns the exit status.
func runData(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		w, code := stderr, 2
		if len(args) > 0 {
			w, code = stdout, 0
		} else {
			fmt.Fprintln(stderr, "holdfastctl: data: missing subcommand")
		}
		fmt.Fprint(w, dataUsage)
		return code
	}
	run, ok := dataCommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "holdfastctl: data: unknown subcommand %q\n", args[0])
		fmt.Fprint(stderr, dataUsage)
		return 2
	}
	return run(args[1:], stdout, stderr)
}

// runDataCheck runs `holdfastctl data check [-json] DIR`.
func runDataCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("data check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var dir string
	err := fs.Parse(args)
	if err == nil && fs.NArg() > 0 {
		dir = fs.Arg(0)
		err = fs.Parse(fs.Args()[1:]) // flags after DIR too
		if err == nil && fs.NArg() > 0 {
			err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
	} else if err == nil {
		err = errors.New("missing the data dir")
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, dataUsage)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "holdfastctl: data check: %v\n", err)
		fmt.Fprint(stderr, dataUsage)
		return 2
	}
	r, err := raftnode.CheckDataDir(dir)
	if err != nil {
		fmt.Fprintf(stderr, "holdfastctl: data check: %v\n", err)
		return 1
	}
	if *asJSON {
		b, _ := json.MarshalIndent(r, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		printDataReport(stdout, r)
	}
	if len(r.Problems) > 0 {
		return 1
	}
	return 0
}

// printDataReport prints a data check's report, one "field: value" line
// each, the segments indented under theirs.
func printDataReport(w io.Writer, r *raftnode.DataReport) {
	line := func(k, v string) { fmt.Fprintf(w, "%s:\t%s\n", k, v) }
	line("data dir", r.DataDir)
	line("format", map[string]string{"walog": "walog (the write-ahead log)", "bolt": "bolt (raft/raft.db, written before the write-ahead log)", "": "-"}[r.Format])
	if r.Format != "" {
		if r.Last == 0 {
			line("log", "empty")
		} else {
			line("log", fmt.Sprintf("entries %d..%d, last term %d", r.First, r.Last, r.LastTerm))
		}
		vote := "no vote"
		if r.Vote != "" {
			vote = fmt.Sprintf("voted for %s in term %d", r.Vote, r.VoteTerm)
		}
		line("term", fmt.Sprintf("%d (%s)", r.CurrentTerm, vote))
		if r.Format == "walog" {
			line("segments", fmt.Sprint(len(r.Segments)))
			for _, s := range r.Segments {
				entries := "no entries"
				if s.Last >= s.First {
					entries = fmt.Sprintf("entries %d..%d, terms %d..%d", s.First, s.Last, s.FirstTerm, s.LastTerm)
				}
				fmt.Fprintf(w, "  %s\tformat %d\t%s\t%d bytes (file %d)\n", s.Name, s.Format, entries, s.Bytes, s.Size)
			}
		}
		snaps := fmt.Sprint(len(r.Snapshots))
		if len(r.Snapshots) > 0 {
			snaps += fmt.Sprintf(" (newest %s: up to entry %d, term %d)", r.Snapshots[0].ID, r.Snapshots[0].Index, r.Snapshots[0].Term)
		}
		line("snapshots", snaps)
	}
	list := func(k string, items []string, none string) {
		if len(items) == 0 {
			line(k, none)
			return
		}
		line(k, fmt.Sprint(len(items)))
		for _, it := range items {
			fmt.Fprintf(w, "  %s\n", it)
		}
	}
	list("next start repairs", r.Repairs, "nothing")
	list("problems", r.Problems, "none")
	if len(r.Problems) > 0 {
		line("verdict", "NOT TRUSTWORTHY: a node refuses to start on this data dir; restore it from a backup of this node, "+
			"or remove the node from the cluster, move the data dir aside and start the node with an empty one (autopilot makes it a voter once caught up)")
		return
	}
	line("verdict", "ok")
}
