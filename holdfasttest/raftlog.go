package holdfasttest

import (
	"fmt"
	"path/filepath"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// VoterHistory reads every raft configuration in the log of a stopped
// node's data dir and returns the voter IDs of each, in log order. Tests
// use it to check how the voter set changed over a run (for example, that
// it never fell below the wanted count). The node must not be running: the
// log is a bbolt file that one process opens at a time.
func VoterHistory(dataDir string) ([][]string, error) {
	store, err := raftboltdb.NewBoltStore(filepath.Join(dataDir, "raft", "raft.db"))
	if err != nil {
		return nil, fmt.Errorf("holdfasttest: open the raft log: %w", err)
	}
	defer store.Close()
	first, _ := store.FirstIndex()
	last, _ := store.LastIndex()
	var out [][]string
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			return nil, fmt.Errorf("holdfasttest: raft log entry %d: %w", i, err)
		}
		if l.Type != raft.LogConfiguration {
			continue
		}
		var voters []string
		for _, s := range raft.DecodeConfiguration(l.Data).Servers {
			if s.Suffrage == raft.Voter {
				voters = append(voters, string(s.ID))
			}
		}
		out = append(out, voters)
	}
	return out, nil
}
