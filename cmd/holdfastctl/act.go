package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/holdfast-go/holdfast/admin"
)

// An acting command changes the cluster through an admin action (a POST,
// see package admin): it needs -confirm with the name of the node at
// -addr, which the node checks before it does anything, and the node must
// authorise it (an HTTPS client certificate, or a loopback client of a
// node without TLS, as the application decides). Every action but leave
// is carried out by the raft leader, which logs it with who asked (the
// client certificate's name, or the remote address).
type acting struct {
	path string
	// args names the command's arguments, in order.
	args []string
	// request builds the action's body from the options; the
	// confirmation is filled in by actOn.
	request func(o options) any
	// print describes a successful answer.
	print func(w io.Writer, body []byte) error
}

// conf is o's confirmation.
func conf(o options) admin.Confirmation { return admin.Confirmation{Confirm: o.confirm} }

// actions are the acting commands.
var actions = map[string]acting{
	"leave": {
		path: "/v1/leave",
		request: func(o options) any {
			return admin.LeaveRequest{Confirmation: conf(o), Force: o.force}
		},
		print: func(w io.Writer, body []byte) error {
			var res admin.LeaveResult
			if err := json.Unmarshal(body, &res); err != nil {
				return err
			}
			_, err := fmt.Fprintf(w, "%s (%s) left the cluster for good and stopped: it is out of the raft configuration.\n"+
				"Its data dir must not be started again in this cluster; wipe it first to bring the machine back as a new node.\n",
				res.Name, res.ID)
			return err
		},
	},
	"drain": {
		path: "/v1/drain", args: []string{"NODE"},
		request: func(o options) any { return admin.DrainRequest{Confirmation: conf(o), Node: o.args[0]} },
		print:   printOperation,
	},
	"undrain": {
		path: "/v1/undrain", args: []string{"NODE"},
		request: func(o options) any { return admin.DrainRequest{Confirmation: conf(o), Node: o.args[0]} },
		print:   printOperation,
	},
	"lease release": {
		path: "/v1/leases/release", args: []string{"NAME"},
		request: func(o options) any { return admin.ReleaseLeaseRequest{Confirmation: conf(o), Name: o.args[0]} },
		print:   printOperation,
	},
	"raft step-down": {
		path:    "/v1/raft/step-down",
		request: func(o options) any { return admin.StepDownRequest{Confirmation: conf(o)} },
		print:   printOperation,
	},
	"shards pin": {
		path: "/v1/shards/pin", args: []string{"SHARD", "NODE"},
		request: func(o options) any {
			return admin.PinShardRequest{Confirmation: conf(o), Shard: o.shard, Node: o.args[1]}
		},
		print: printOperation,
	},
	"shards move": {
		path: "/v1/shards/move", args: []string{"SHARD", "NODE"},
		request: func(o options) any {
			return admin.PinShardRequest{Confirmation: conf(o), Shard: o.shard, Node: o.args[1]}
		},
		print: printOperation,
	},
	"shards unpin": {
		path: "/v1/shards/unpin", args: []string{"SHARD"},
		request: func(o options) any { return admin.UnpinShardRequest{Confirmation: conf(o), Shard: o.shard} },
		print:   printOperation,
	},
	"shards rule": {
		path: "/v1/shards/rule", args: []string{"NAME", "RULE"},
		request: func(o options) any {
			return admin.RuleRequest{Confirmation: conf(o), Name: o.args[0], Rule: o.args[1]}
		},
		print: printOperation,
	},
	"shards unrule": {
		path: "/v1/shards/unrule", args: []string{"NAME"},
		request: func(o options) any { return admin.UnruleRequest{Confirmation: conf(o), Name: o.args[0]} },
		print:   printOperation,
	},
	"raft remove-peer": {
		path: "/v1/raft/remove-peer", args: []string{"NODE"},
		request: func(o options) any {
			return admin.RemovePeerRequest{Confirmation: conf(o), Node: o.args[0], Force: o.force}
		},
		print: printOperation,
	},
}

// printOperation describes an operator action's result.
func printOperation(w io.Writer, body []byte) error {
	var res admin.OperationResult
	if err := json.Unmarshal(body, &res); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s.\n(carried out by the raft leader %s, which logged who asked)\n", res.Message, res.Leader)
	return err
}

// actionTimeout is an acting command's default -timeout: a leave may wait
// for a replacement voter to be promoted, a drain for the shards to move.
const actionTimeout = 2 * time.Minute

// actOn runs the acting command o.command on t.
func actOn(t target, o options, stdout io.Writer) error {
	a := actions[o.command]
	body, err := post(t, a.path, a.request(o), o.timeout)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(stdout, o.command, body)
	}
	return a.print(stdout, body)
}
