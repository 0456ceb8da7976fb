package main

import (
	"context"

	"github.com/holdfast-go/holdfast/coordinator"
)

// releaseMode is one way holdfast's side of the acquire and handoff rows
// (1, 2, 4, 1L, 4L) ends a lease. The rows run once per mode, A/B against
// the peers each time (their side is unchanged).
type releaseMode struct {
	// label is empty for the default Release: its rows keep their plain
	// titles, and the targets are judged on them. Any other mode's rows
	// carry the label in their title.
	label   string
	release func(l *coordinator.Lease, ctx context.Context) error
	// what says what the release waits for, printed under each table.
	what string
}

// releaseModes lists the releases measured. The first is Release, the
// library's default, which the targets are judged on.
//
// Equal terms: etcd's Unlock and ZooKeeper's delete return once the
// release has committed, and so does holdfast's Release (linearizable: once
// it returns, every Sync-then-read on any node sees the lease free). The
// opt-in ReleaseBeforeCommit, which returns earlier and promises only this
// node's own order, gets rows of its own, labelled, not judged on.
var releaseModes = []releaseMode{
	{release: (*coordinator.Lease).Release,
		what: "returns once the release has committed, as etcd's Unlock and ZooKeeper's delete do"},
	{label: "opt-in ReleaseBeforeCommit", release: (*coordinator.Lease).ReleaseBeforeCommit,
		what: "returns once raft on the leader has taken the release in, before it commits: only this node's own later requests are ordered after it (not like for like with the peers)"},
}

// titled returns a row title for mode: title itself for the default.
func (m releaseMode) titled(title string) string {
	if m.label == "" {
		return title
	}
	return title + ", holdfast " + m.label
}
