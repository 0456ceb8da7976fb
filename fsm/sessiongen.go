package fsm

// Session generations: a node numbers its session creates (SessionCmd.Gen,
// increasing per node), so that a create that commits late (its caller
// gave up: a slow commit, a lost answer, a copy delayed in the network)
// cannot bring back an incarnation the node has moved past:
//
//   - A create whose generation is not above that of a session the node
//     (same NodeID) still has is stale: it changes nothing (Result.Stale).
//   - A create above every session of its node ends those sessions, as
//     their close would (their leases go to the next waiters, their shards
//     are freed): the node opens a session only once it stopped believing
//     in the previous ones (its belief ended, the create failed, or the
//     process restarted), so nobody holds anything under them, and a
//     create that the node gave up on but that committed anyway (an orphan
//     nobody keeps alive) lasts only until the node's next create.
//
// A retry of a create that committed (same ID) is answered as before (a
// no-op). Creates without a generation (Gen 0: an older release's log)
// follow neither rule. The generation is kept in the Session, so
// snapshots without generations encode as before.

// staleCreate reports whether c is older than a session its node has.
func staleCreate(st state, c *SessionCmd) bool {
	if c.Gen == 0 || c.NodeID == "" {
		return false
	}
	for _, s := range st.Sessions {
		if s.NodeID == c.NodeID && s.Gen >= c.Gen {
			return true
		}
	}
	return false
}

// supersede ends every session of c's node older than c (c itself was
// just created), in session ID order.
func supersede(st state, index uint64, c *SessionCmd, changed *[]uint32) state {
	if c.Gen == 0 || c.NodeID == "" {
		return st
	}
	var older []string
	for _, id := range sortedKeys(st.Sessions) {
		if s := st.Sessions[id]; s.NodeID == c.NodeID && s.Gen < c.Gen {
			older = append(older, id)
		}
	}
	for _, id := range older {
		st, _, _ = applySessionEnd(st, index, &SessionCmd{ID: id}, false, changed)
	}
	return st
}
