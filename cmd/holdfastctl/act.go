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
// node without TLS, as the application decides).
type acting struct {
	path string
	// request builds the action's body from the options; the
	// confirmation is filled in by actOn.
	request func(o options) any
	// print describes a successful answer.
	print func(w io.Writer, body []byte) error
}

// actions are the acting commands.
var actions = map[string]acting{
	"leave": {
		path: "/v1/leave",
		request: func(o options) any {
			return admin.LeaveRequest{Confirmation: admin.Confirmation{Confirm: o.confirm}, Force: o.force}
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
}

// actionTimeout is an acting command's default -timeout: a leave may wait
// for a replacement voter to be promoted.
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
