package holdfasttest

import (
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/holdfast-go/holdfast/internal/raftnode"
)

// VoterHistory reads every raft configuration in the log of a stopped
// node's data dir and returns the voter IDs of each, in log order. Tests
// use it to check how the voter set changed over a run (for example, that
// it never fell below the wanted count). The node must not be running: the
// data dir is locked while a node has it open.
func VoterHistory(dataDir string) ([][]string, error) {
	var out [][]string
	err := raftnode.EachLogEntry(dataDir, func(l *raft.Log) error {
		if l.Type != raft.LogConfiguration {
			return nil
		}
		var voters []string
		for _, s := range raft.DecodeConfiguration(l.Data).Servers {
			if s.Suffrage == raft.Voter {
				voters = append(voters, string(s.ID))
			}
		}
		out = append(out, voters)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("holdfasttest: reading the raft log: %w", err)
	}
	return out, nil
}
