package admin

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/holdfast-go/holdfast/coordinator"
)

// Handler returns the read-only admin handler for c (see the package doc
// for the endpoints): New with no Options, which refuses every action.
// Paths are relative to where the handler is mounted: use
// http.StripPrefix to mount it under a prefix. It is safe for concurrent
// use and keeps answering after c shuts down (the probes then fail). It
// panics if c is nil, as http.Handle does for a nil handler.
func Handler(c *coordinator.Coordinator) http.Handler { return New(c, Options{}) }

// New returns the admin handler for c with the actions (POST endpoints
// that change the cluster) that opts.Authorize allows; see Handler.
func New(c *coordinator.Coordinator, opts Options) http.Handler {
	if c == nil {
		panic("admin: nil Coordinator")
	}
	h := &handler{c: c, opts: opts}
	h.actions = operations()
	h.actions["/v1/leave"] = typedAction(leave)
	shardOperations(h.actions)
	h.routes = map[string]http.HandlerFunc{
		"/v1/status":      h.status,
		"/v1/shards":      h.shards,
		"/v1/shards/plan": h.plan,
		"/v1/leases":      h.leases,
		"/v1/semaphores":  h.semaphores,
		"/healthz":        h.healthz,
		"/readyz":         h.readyz,
	}
	return h
}

type handler struct {
	c       *coordinator.Coordinator
	opts    Options
	routes  map[string]http.HandlerFunc // never written after New
	actions map[string]action           // POST endpoints; never written after New
}

// ServeHTTP routes by exact path: the read endpoints allow GET and HEAD
// only, the actions POST only.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a, ok := h.actions[r.URL.Path]; ok {
		w.Header().Set("Cache-Control", "no-store")
		h.serveAction(w, r, a)
		return
	}
	route, ok := h.routes[r.URL.Path]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no admin endpoint %q", r.URL.Path))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: use GET or HEAD", r.Method))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	route(w, r)
}

func (h *handler) status(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, buildStatus(h.c))
}

func (h *handler) shards(w http.ResponseWriter, r *http.Request) {
	owner, filter := r.URL.Query()["owner"]
	if filter && len(owner) != 1 {
		writeError(w, http.StatusBadRequest, "give at most one owner")
		return
	}
	list := buildShards(h.c.Table(), owner, filter)
	list.Pins = pinRows(h.c)
	list.Rules = ruleRows(h.c)
	if since, ok := h.c.NoLeaderSince(); ok {
		since = since.UTC()
		list.Stale, list.NoLeaderSince = true, &since
	}
	writeJSON(w, http.StatusOK, list)
}

func (h *handler) leases(w http.ResponseWriter, _ *http.Request) {
	ls := h.c.Leases()
	out := LeaseList{Leases: make([]LeaseRow, 0, len(ls))}
	for _, l := range ls {
		out.Leases = append(out.Leases, LeaseRow{Name: l.Name, Holder: l.Holder.Node.Name, HolderID: l.Holder.Node.ID,
			Session: l.Holder.Session, Token: l.Holder.Token, Value: l.Holder.Value, Waiters: l.Waiters})
	}
	writeJSON(w, http.StatusOK, out)
}

// healthz and readyz answer with one line; with ?verbose a second line
// tells the raft group's health (degraded or not), which does not change
// the status code: a degraded group is the cluster's state, not this
// node's fault.
func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	if errors.Is(h.c.Ready(), coordinator.ErrShutdown) {
		writeText(w, http.StatusServiceUnavailable, "shut down\n"+h.detail(r))
		return
	}
	writeText(w, http.StatusOK, "ok\n"+h.detail(r))
}

func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	if err := h.c.Ready(); err != nil {
		writeText(w, http.StatusServiceUnavailable, err.Error()+"\n"+h.detail(r))
		return
	}
	writeText(w, http.StatusOK, "ready\n"+h.detail(r))
}

// detail is the verbose part of a probe answer: "" unless ?verbose.
func (h *handler) detail(r *http.Request) string {
	if !r.URL.Query().Has("verbose") {
		return ""
	}
	g := h.c.Health()
	return groupLine(groupRow(g)) + "raft storage: " + g.Storage.String() + "\n"
}

// buildStatus reads c's view, one accessor after the other.
func buildStatus(c *coordinator.Coordinator) Status {
	st := Status{
		Name:         c.NodeName(),
		ID:           c.ID(),
		ClusterID:    c.ClusterID(),
		RPCAddr:      c.RPCAddr(),
		GossipAddr:   c.GossipAddr(),
		RaftState:    string(c.RaftState()),
		AppliedIndex: c.AppliedIndex(),
		LastToken:    c.LastToken(),
		TokenBase:    c.TokenBase(),
		Shards:       c.Shards(),
		Ready:        true,
	}
	if t, ok := c.ClusterCreated(); ok {
		st.ClusterCreated = &t
	}
	if l, ok := c.RaftLeader(); ok {
		st.Leader = &NodeRef{Name: l.Name, ID: l.ID, RPCAddr: l.RPCAddr}
	}
	members := c.Members()
	names := make(map[string]string, len(members))
	st.Members = make([]MemberRow, 0, len(members))
	for _, m := range members {
		names[m.ID] = m.Name
		st.Members = append(st.Members, MemberRow{Name: m.Name, ID: m.ID, RPCAddr: m.RPCAddr,
			GossipAddr: m.GossipAddr, State: string(m.State), Suffrage: string(m.Suffrage),
			Eligible: m.Eligible, Zone: m.Zone, Tags: splitTags(m.Tags), ClusterID: m.ClusterID, Since: m.Since.UTC()})
	}
	g := c.Health()
	st.Group = groupRow(g)
	st.Storage = storageRow(g.Storage)
	verdict := map[string]bool{}
	if g.Known {
		for _, v := range g.Voters {
			verdict[v.ID] = v.Healthy
		}
	}
	st.Voters = make([]Voter, 0, 5)
	for _, id := range c.Voters() {
		v := Voter{ID: id, Name: names[id]}
		if h, ok := verdict[id]; ok {
			v.Healthy = &h
		}
		st.Voters = append(st.Voters, v)
	}
	st.NonVoters = make([]Voter, 0, 4)
	for _, id := range c.NonVoters() {
		st.NonVoters = append(st.NonVoters, Voter{ID: id, Name: names[id]})
	}
	for _, vs := range [][]Voter{st.Voters, st.NonVoters} {
		slices.SortFunc(vs, func(a, b Voter) int {
			return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
		})
	}
	if s, ok := c.Session(); ok {
		st.Session = &SessionRow{ID: s.ID, RemainingSeconds: s.Remaining.Seconds(), Drained: s.Drained}
	}
	f := c.Formation()
	st.Formation = FormationRow{Formed: f.Formed, Expect: f.Expect, Seen: f.Seen, Progress: f.Progress}
	st.Placement = placementRow(c)
	if err := c.Ready(); err != nil {
		st.Ready, st.NotReadyReason = false, err.Error()
	}
	return st
}

// storageRow turns the coordinator's StorageHealth into its schema row.
func storageRow(h coordinator.StorageHealth) StorageRow {
	row := StorageRow{OK: !h.Failing, Op: h.Op, Error: h.Err, RestartNeeded: h.Failed, Errors: h.Errors, Line: h.String()}
	if h.Failing {
		since := h.Since.UTC()
		row.Since = &since
	}
	return row
}

// groupRow turns the coordinator's GroupHealth into its schema row.
func groupRow(g coordinator.GroupHealth) GroupHealth {
	row := GroupHealth{Known: g.Known, Degraded: g.Degraded(), FailureTolerance: g.FailureTolerance,
		Voters: len(g.Voters), WantedVoters: g.Wanted, LeaderID: g.Leader, AgeSeconds: g.Age.Seconds(),
		UnknownReason: g.Unknown, Unhealthy: []string{}}
	for _, v := range g.Voters {
		if v.Healthy {
			row.HealthyVoters++
		} else {
			row.Unhealthy = append(row.Unhealthy, cmp.Or(v.Name, v.ID))
		}
	}
	return row
}

// groupLine is the raft group check's line in a verbose probe answer,
// with the judgement's age.
func groupLine(g GroupHealth) string {
	switch {
	case !g.Known && g.Voters > 0:
		return fmt.Sprintf("raft group: unknown: %s (last judged %s: %d of %d voters healthy, fault tolerance %d)\n",
			unknownReason(g), g.JudgedAgo(), g.HealthyVoters, g.Voters, g.FailureTolerance)
	case !g.Known:
		return "raft group: unknown: " + unknownReason(g) + "\n"
	case g.Degraded:
		return fmt.Sprintf("raft group: degraded: %d of %d voters healthy (want %d), fault tolerance %d, unhealthy: %s (judged %s)\n",
			g.HealthyVoters, g.Voters, g.WantedVoters, g.FailureTolerance, strings.Join(g.Unhealthy, ", "), g.JudgedAgo())
	}
	return fmt.Sprintf("raft group: ok: %d of %d voters healthy, fault tolerance %d (judged %s)\n",
		g.HealthyVoters, g.Voters, g.FailureTolerance, g.JudgedAgo())
}

// unknownReason is g's UnknownReason, or the words of a node that did not
// send one.
func unknownReason(g GroupHealth) string {
	if g.UnknownReason != "" {
		return g.UnknownReason
	}
	return "no recent judgement from a raft leader"
}

// buildShards lists t's shards, keeping only those owned by owner[0] when
// filter is set.
func buildShards(t *coordinator.ShardTable, owner []string, filter bool) ShardList {
	out := ShardList{Version: t.Version(), Count: t.Len(), Shards: make([]ShardRow, 0, t.Len())}
	for s := range t.Len() {
		info, ok := t.Shard(coordinator.ShardID(s))
		if !ok {
			continue
		}
		row := ShardRow{Shard: uint32(info.Shard), State: string(info.State), Token: info.Owner.Token}
		if info.State != coordinator.ShardFree {
			row.Owner, row.OwnerID, row.Addr = info.Owner.Node.Name, info.Owner.Node.ID, info.Owner.Addr
		}
		if filter && row.Owner != owner[0] {
			continue
		}
		out.Shards = append(out.Shards, row)
	}
	return out
}

// writeJSON writes v as the JSON body of a response with the given code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // the schema types always marshal; keep the answer valid JSON anyway
		code = http.StatusInternalServerError
		b, _ = json.Marshal(Error{Error: "encoding the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// writeError writes a JSON Error with the given code.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, code, Error{Error: msg})
}

// writeText writes a plain-text probe answer.
func writeText(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write([]byte(body))
}

// splitTags is a comma-separated tag list as a list ([] for none).
func splitTags(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}
