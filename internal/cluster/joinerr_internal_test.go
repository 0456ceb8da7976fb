package cluster

import (
	"errors"
	"strings"
	"testing"
)

// TestDescribeJoinError flattens memberlist's multierror text (as it
// reads for two seeds) to one line, and picks the hints of each reason.
func TestDescribeJoinError(t *testing.T) {
	err := errors.New("membership: join a:1,b:2: 2 errors occurred:\n" +
		"\t* failed to join 10.0.0.1:7947: received invalid msgType (72), expected pushPullMsg (6) from=10.0.0.1:7947\n" +
		"\t* failed to join 10.0.0.2:7946: dial tcp 10.0.0.2:7946: connect: connection refused\n\n")
	line, hint := describeJoinError(err)
	want := "failed to join 10.0.0.1:7947: received invalid msgType (72), expected pushPullMsg (6) from=10.0.0.1:7947; " +
		"failed to join 10.0.0.2:7946: dial tcp 10.0.0.2:7946: connect: connection refused"
	if line != want {
		t.Errorf("line:\n got %q\nwant %q", line, want)
	}
	for _, h := range []string{"nothing listening", "not a gossip port"} {
		if !strings.Contains(hint, h) {
			t.Errorf("hint %q lacks %q", hint, h)
		}
	}
	if _, hint := describeJoinError(errors.New("something new")); hint != "" {
		t.Errorf("hint for an unknown error: %q", hint)
	}
}
