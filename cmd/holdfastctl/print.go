package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/holdfast-go/holdfast/admin"
)

// command fetches the command's endpoint from t and prints the answer.
func command(t target, o options, stdout io.Writer) error {
	path := commands[o.command]
	if o.owner != "" {
		path += "?owner=" + url.QueryEscape(o.owner)
	}
	body, err := fetch(t, path, o.timeout)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(stdout, o.command, body)
	}
	var v any
	switch o.command {
	case "status", "members":
		v = new(admin.Status)
	case "shards":
		v = new(admin.ShardList)
	case "shards plan":
		v = new(admin.PlanResult)
	case "semaphores":
		v = new(admin.SemaphoreList)
	default:
		v = new(admin.LeaseList)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s answered %s with JSON that is not the admin schema: %v", t.name, path, err)
	}
	tw := newTable(stdout)
	switch v := v.(type) {
	case *admin.Status:
		if o.command == "members" {
			printMembers(tw, v)
		} else {
			printStatus(tw, v)
		}
	case *admin.ShardList:
		printShards(tw, v, o.owner)
		tw.Flush()
		printPins(stdout, v.Pins)
		printRules(stdout, v.Rules)
	case *admin.PlanResult:
		printPlan(tw, v)
	case *admin.LeaseList:
		printLeases(tw, v)
	case *admin.SemaphoreList:
		printSemaphores(tw, v)
	}
	return tw.Flush()
}

// newTable is the aligned writer every listing is printed through.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// printJSON pretty-prints body; for members, only the status's members
// array.
func printJSON(w io.Writer, cmd string, body []byte) error {
	if cmd == "members" {
		var st struct {
			Members json.RawMessage `json:"members"`
		}
		if err := json.Unmarshal(body, &st); err != nil || st.Members == nil {
			return fmt.Errorf("the status answer has no members array")
		}
		body = st.Members
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// printStatus prints one "field: value" line per status field.
func printStatus(w io.Writer, st *admin.Status) {
	leader := "none known"
	if l := st.Leader; l != nil {
		leader = fmt.Sprintf("%s (%s) at %s", dash(l.Name), l.ID, l.RPCAddr)
	}
	voters := make([]string, 0, len(st.Voters))
	for _, v := range st.Voters {
		name := cmp.Or(v.Name, v.ID)
		if v.Healthy != nil && !*v.Healthy {
			name += " (unhealthy)"
		}
		voters = append(voters, name)
	}
	nonVoters := make([]string, 0, len(st.NonVoters))
	for _, v := range st.NonVoters {
		nonVoters = append(nonVoters, cmp.Or(v.Name, v.ID))
	}
	alive := 0
	for _, m := range st.Members {
		if m.State == "alive" {
			alive++
		}
	}
	session := "none"
	if s := st.Session; s != nil {
		session = fmt.Sprintf("%s (%.1fs left)", s.ID, s.RemainingSeconds)
		if s.Drained {
			session += ", drained"
		}
	}
	ready := "yes"
	if !st.Ready {
		ready = "no: " + st.NotReadyReason
	}
	for _, kv := range [][2]string{
		{"name", st.Name}, {"id", st.ID}, {"cluster_id", dash(st.ClusterID)},
		{"rpc_addr", st.RPCAddr}, {"gossip_addr", st.GossipAddr}, {"raft_state", st.RaftState},
		{"leader", leader}, {"voters", dash(strings.Join(voters, ", "))},
		{"non_voters", dash(strings.Join(nonVoters, ", "))},
		{"fault_tolerance", faultTolerance(st.Group)}, {"storage", cmp.Or(st.Storage.Line, "ok")},
		{"members", fmt.Sprintf("%d (%d alive)", len(st.Members), alive)},
		{"applied_index", fmt.Sprint(st.AppliedIndex)}, {"last_token", fmt.Sprint(st.LastToken)},
		{"token_base", tokenBase(*st)},
		{"session", session}, {"shards", fmt.Sprint(st.Shards)}, {"ready", ready},
		{"formation", dash(st.Formation.Progress)},
	} {
		fmt.Fprintf(w, "%s:\t%s\n", kv[0], kv[1])
	}
}

// tokenBase describes where the cluster's tokens started: the base, the
// grants since, and when the cluster was created.
func tokenBase(st admin.Status) string {
	if st.TokenBase == 0 {
		return "0 (tokens count from 1)"
	}
	s := fmt.Sprintf("%d (%d grants since)", st.TokenBase, st.LastToken-min(st.LastToken, st.TokenBase))
	if st.ClusterCreated != nil {
		s += ", cluster created " + st.ClusterCreated.UTC().Format(time.RFC3339)
	}
	return s
}

// faultTolerance summarises the raft group's health: how many more voters
// may fail, whether the group is degraded, and how old the judgement is.
// Without a judgement it says why, with the last figures and their age.
func faultTolerance(g admin.GroupHealth) string {
	switch {
	case !g.Known:
		why := cmp.Or(g.UnknownReason, "no recent judgement from a raft leader")
		if g.Voters == 0 {
			return "unknown: " + why
		}
		return fmt.Sprintf("unknown: %s (last judged %s: %d of %d voters healthy, fault tolerance %d)",
			why, g.JudgedAgo(), g.HealthyVoters, g.Voters, g.FailureTolerance)
	case g.Degraded:
		s := fmt.Sprintf("%d, DEGRADED: %d of %d voters healthy (want %d)", g.FailureTolerance, g.HealthyVoters, g.Voters, g.WantedVoters)
		if len(g.Unhealthy) > 0 {
			s += ", unhealthy: " + strings.Join(g.Unhealthy, ", ")
		}
		return s + "; judged " + g.JudgedAgo()
	}
	return fmt.Sprintf("%d (%d of %d voters healthy, judged %s)", g.FailureTolerance, g.HealthyVoters, g.Voters, g.JudgedAgo())
}

// printMembers prints one row per member; the placement tags come last,
// after the columns earlier releases printed.
func printMembers(w io.Writer, st *admin.Status) {
	fmt.Fprintln(w, "NAME\tID\tSTATE\tSUFFRAGE\tELIGIBLE\tZONE\tRPC_ADDR\tGOSSIP_ADDR\tSINCE\tTAGS")
	for _, m := range st.Members {
		since := "-"
		if !m.Since.IsZero() {
			since = m.Since.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%t\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.ID, m.State, m.Suffrage,
			m.Eligible, dash(m.Zone), m.RPCAddr, m.GossipAddr, since, dash(strings.Join(m.Tags, ",")))
	}
}

// printShards prints the table version and one row per shard.
func printShards(w io.Writer, l *admin.ShardList, owner string) {
	owned := 0
	for _, r := range l.Shards {
		if r.State != "free" {
			owned++
		}
	}
	if l.Stale && l.NoLeaderSince != nil {
		fmt.Fprintf(w, "STALE: no raft leader known since %s (%s ago): owners may have changed since\n",
			l.NoLeaderSince.UTC().Format(time.RFC3339), time.Since(*l.NoLeaderSince).Round(time.Second))
	}
	if owner != "" {
		fmt.Fprintf(w, "version %d: %d shards, %d owned by %s\n", l.Version, l.Count, len(l.Shards), owner)
	} else {
		fmt.Fprintf(w, "version %d: %d shards, %d owned\n", l.Version, l.Count, owned)
	}
	if len(l.Shards) == 0 {
		return
	}
	fmt.Fprintln(w, "SHARD\tSTATE\tOWNER\tOWNER_ID\tADDR\tTOKEN")
	for _, r := range l.Shards {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d\n", r.Shard, r.State, dash(r.Owner), dash(r.OwnerID), dash(r.Addr), r.Token)
	}
}

// printLeases prints one row per held lease.
func printLeases(w io.Writer, l *admin.LeaseList) {
	if len(l.Leases) == 0 {
		fmt.Fprintln(w, "no leases held")
		return
	}
	fmt.Fprintln(w, "NAME\tHOLDER\tHOLDER_ID\tSESSION\tTOKEN\tWAITERS\tVALUE")
	for _, r := range l.Leases {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.Name, dash(r.Holder), r.HolderID, r.Session, r.Token, r.Waiters,
			dash(cellValue(r.Value)))
	}
}

// printSemaphores prints one row per semaphore in use, its permits' holders
// as NODE:TOKEN in grant order.
func printSemaphores(w io.Writer, l *admin.SemaphoreList) {
	if len(l.Semaphores) == 0 {
		fmt.Fprintln(w, "no semaphores in use")
		return
	}
	fmt.Fprintln(w, "NAME\tLIMIT\tHELD\tWAITERS\tHOLDERS")
	for _, s := range l.Semaphores {
		holders := make([]string, 0, len(s.Holders))
		for _, h := range s.Holders {
			holders = append(holders, fmt.Sprintf("%s:%d", dash(h.Holder), h.Token))
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\n", s.Name, s.Limit, len(s.Holders), s.Waiters, dash(strings.Join(holders, " ")))
	}
}

// dash stands in for an empty table cell.
func dash(s string) string { return cmp.Or(s, "-") }

// cellValue is a holder value as a table cell: quoted when it holds
// spaces, tabs or other characters that would break the columns.
func cellValue(v string) string {
	if v == "" || strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '"' }) < 0 {
		return v
	}
	return strconv.Quote(v)
}
