package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// defaultAddr is where holdfastctl looks for the admin handler without
// -addr or $HOLDFASTCTL_ADDR: the first node of the README's quick start.
const defaultAddr = "127.0.0.1:8080"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parsed command line.
type options struct {
	addr    string
	json    bool
	timeout time.Duration
	owner   string
	command string   // one word, or two ("lease release", "raft step-down")
	args    []string // the command's arguments (NODE, NAME)
	tls     tlsFlags
	confirm string // acting commands: the name of the node at -addr
	shard   uint32 // shards pin, unpin, move: the SHARD argument
	force   bool   // leave: even with no replacement
}

// usageError is a command-line mistake: exit status 2, with the usage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// commands maps each command to the admin endpoint it reads.
var commands = map[string]string{
	"status":      "/v1/status",
	"members":     "/v1/status",
	"shards":      "/v1/shards",
	"leases":      "/v1/leases",
	"semaphores":  "/v1/semaphores",
	"shards plan": "/v1/shards/plan",
}

// shardSubs are the second words of the shards commands; "shards" alone
// lists the shards.
var shardSubs = []string{"pin", "unpin", "move", "plan", "rule", "unrule"}

// groups are the first words of two-word commands, with their second.
var groups = map[string]string{"lease": "release", "raft": "step-down|remove-peer"}

// run is the whole program: it parses args, asks the node, prints to
// stdout, and returns the exit status (see the package doc).
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "cert" {
		return runCert(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "data" {
		return runData(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "token-floor" {
		return runTokenFloor(args[1:], stdout, stderr)
	}
	opts, fs, err := parseArgs(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(stdout, fs)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "holdfastctl: %v\n", err)
		printUsage(stderr, fs)
		return 2
	}
	t, err := newTarget(opts.addr)
	if err == nil {
		var tc *tls.Config
		var implicit bool
		if tc, implicit, err = opts.tls.config(); err == nil {
			t, err = withTLS(t, tc, implicit)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "holdfastctl: %v\n", err)
		printUsage(stderr, fs)
		return 2
	}
	run := command
	if _, ok := actions[opts.command]; ok {
		run = actOn
	}
	if err := run(t, opts, stdout); err != nil {
		fmt.Fprintf(stderr, "holdfastctl: %v\n", err)
		return 1
	}
	return 0
}

// parseArgs parses flags before and after the command. It returns
// flag.ErrHelp for -h, -help and the help command, and a *usageError (or
// the flag package's error) for a bad command line.
func parseArgs(args []string) (options, *flag.FlagSet, error) {
	var o options
	fs := flag.NewFlagSet("holdfastctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints the error and the usage itself
	fs.Usage = func() {}
	addr := defaultAddr
	if env := os.Getenv("HOLDFASTCTL_ADDR"); env != "" {
		addr = env
	}
	fs.StringVar(&o.addr, "addr", addr, "admin handler `address`: HOST:PORT, or a URL such as http://host:port/prefix "+
		"(default: $HOLDFASTCTL_ADDR, else "+defaultAddr+")")
	fs.BoolVar(&o.json, "json", false, "print the JSON answer, pretty-printed, instead of a table")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "give up after this `duration`")
	fs.StringVar(&o.owner, "owner", "", "with shards: list only the shards owned by node `NAME`")
	fs.StringVar(&o.confirm, "confirm", "", "acting commands: the `NAME` of the node at -addr, which must match before anything is done")
	fs.BoolVar(&o.force, "force", false, "with leave: leave even when fewer voters than the cluster keeps would remain and no node can replace it; "+
		"with raft remove-peer: remove a node gossip shows alive")
	o.tls.register(fs)
	words, err := parseInterleaved(fs, args)
	if err != nil {
		return o, fs, err
	}
	if len(words) == 0 {
		return o, fs, &usageError{"missing command"}
	}
	o.command, words = words[0], words[1:]
	if subs, ok := groups[o.command]; ok {
		if len(words) == 0 {
			return o, fs, &usageError{fmt.Sprintf("%s needs a subcommand: %s", o.command, subs)}
		}
		o.command, words = o.command+" "+words[0], words[1:]
	} else if o.command == "shards" && len(words) > 0 && slices.Contains(shardSubs, words[0]) {
		o.command, words = o.command+" "+words[0], words[1:]
	}
	o.args = words
	a, act := actions[o.command]
	switch {
	case o.command == "help":
		return o, fs, flag.ErrHelp
	case commands[o.command] == "" && !act:
		return o, fs, &usageError{fmt.Sprintf("unknown command %q", o.command)}
	}
	if err := checkActing(&o, fs); err != nil {
		return o, fs, err
	}
	switch {
	case len(o.args) > len(a.args):
		return o, fs, &usageError{fmt.Sprintf("unexpected argument %q after %s", o.args[len(a.args)], o.command)}
	case len(o.args) < len(a.args):
		return o, fs, &usageError{fmt.Sprintf("%s needs %s", o.command, strings.Join(a.args, " "))}
	case o.timeout <= 0:
		return o, fs, &usageError{fmt.Sprintf("-timeout is %v; must be positive", o.timeout)}
	case o.owner != "" && o.command != "shards":
		return o, fs, &usageError{"-owner applies to shards only"}
	}
	if len(a.args) > 0 && a.args[0] == "SHARD" {
		n, err := strconv.ParseUint(o.args[0], 10, 32)
		if err != nil {
			return o, fs, &usageError{fmt.Sprintf("%s: SHARD is %q; want a shard number", o.command, o.args[0])}
		}
		o.shard = uint32(n)
	}
	return o, fs, nil
}

// parseInterleaved parses fs's flags wherever they are among args and
// returns the other arguments in order.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return words, nil
		}
		words = append(words, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// checkActing checks the flags of acting commands: -confirm is required
// by them and refused by the others, -force is leave's; an acting command
// waits up to actionTimeout unless -timeout was given.
func checkActing(o *options, fs *flag.FlagSet) error {
	_, act := actions[o.command]
	timeoutSet := false
	fs.Visit(func(f *flag.Flag) { timeoutSet = timeoutSet || f.Name == "timeout" })
	switch {
	case act && o.confirm == "":
		return &usageError{fmt.Sprintf("%s changes the cluster: give -confirm NAME, the name of the node at -addr", o.command)}
	case !act && o.confirm != "" && o.command != "help":
		return &usageError{"-confirm applies to acting commands only (leave, drain, undrain, lease release, raft step-down, raft remove-peer, shards pin, shards unpin, shards move, shards rule, shards unrule)"}
	case o.force && o.command != "leave" && o.command != "raft remove-peer":
		return &usageError{"-force applies to leave and raft remove-peer only"}
	case act && !timeoutSet:
		o.timeout = actionTimeout
	}
	return nil
}

// printUsage writes the usage and the flag defaults to w.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: holdfastctl [flags] status|members|shards|shards plan|leases|semaphores
       holdfastctl [flags] -confirm NAME shards pin SHARD NODE | shards unpin SHARD | shards move SHARD NODE
       holdfastctl [flags] -confirm NAME shards rule NAME FIRST-LAST:TAG[,TAG...] | shards unrule NAME
       holdfastctl [flags] -confirm NAME drain NODE | undrain NODE | lease release LEASE
       holdfastctl [flags] -confirm NAME raft step-down | raft remove-peer [-force] NODE
       holdfastctl [flags] -confirm NAME [-force] leave
       holdfastctl data check|peers|recover DIR ...   (offline, on a stopped node's data dir: holdfastctl data help)

Shows what one holdfast node knows of its cluster, from the admin endpoints
the application serves (package admin), and acts on it.

commands (certificates: holdfastctl cert help; a stopped node's data dir: holdfastctl data help;
the token floor of a database for a new cluster: holdfastctl token-floor -h):
  status      the node, its raft role and leader, voters, session, readiness
  members     every node the answering node's gossip knows of, with its zone and placement tags
  shards      every shard with its state, owner and token
  leases      every held named lease with its holder, token, waiters and holder value
  semaphores  every semaphore in use with its limit, holders and waiters
  help        print this usage

acting commands: each needs -confirm with the name of the node at -addr (checked before anything is
done) and a node that authorises actions (HTTPS with client certificates: -certs or -ca/-cert/-key;
or loopback without TLS). All but leave are carried out by the raft leader, which logs who asked.
  drain NODE           NODE hands every shard it owns to the others and takes none until undrained;
                       returns once it owns none
  undrain NODE         NODE takes shards again
  lease release LEASE  end the current grant of lease LEASE (a stuck holder): its next waiter gets it
                       with a new token; the holder's node ends its belief first, or, if it does not
                       answer, the leader releases it without it and only the fence stops the old
                       holder's writes
  shards rule NAME FIRST-LAST:TAG[,TAG...]
                       placement rule NAME: only nodes with every TAG (Config.Shards.Tags; a node's
                       zone Z is the tag zone=Z) own shards FIRST to LAST; shards on other nodes move
                       (fenced handoffs), and shards no node passes stay unowned (shards plan lists them)
  shards unrule NAME   remove placement rule NAME
  raft step-down       the raft leader hands leadership to another voter
  raft remove-peer NODE
                       take NODE (a name or raft ID) out of the raft configuration, a replacement voter
                       promoted first when one is ready; refused when the voters left would have no
                       quorum, for the leader itself, and for a node gossip shows alive (use leave on
                       it) unless -force
  leave                decommission the node at -addr for good: it leaves the raft configuration
                       (a replacement voter promoted first) and stops; refused when too few voters
                       would remain, unless -force. A restart needs no leave: a stopped voter keeps its vote.

flags (before or after the command):
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprint(w, `
exit status: 0 ok, 1 node unreachable or answered an error (a refused action), 2 usage error
`)
}
