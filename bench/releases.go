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
// release has committed. When holdfast's Release waits for its commit too
// (the linearizable release), change the first entry's what, and give any
// faster release that stays available as an opt-in an entry of its own,
// for example:
//
//	{label: "opt-in early release", release: (*coordinator.Lease).ReleaseEarly,
//	 what: "returns once the leader has taken the release in, before it commits"},
var releaseModes = []releaseMode{
	{release: (*coordinator.Lease).Release,
		what: "returns once raft on the leader has taken the release in, before it commits; etcd's Unlock and ZooKeeper's delete return after their commit"},
}

// titled returns a row title for mode: title itself for the default.
func (m releaseMode) titled(title string) string {
	if m.label == "" {
		return title
	}
	return title + ", holdfast " + m.label
}
