package lincheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/holdfast-go/holdfast/internal/testkit"
)

// OutDirEnv names the environment variable of a directory where Verify
// writes the visualization of a rejected history and the history itself
// (default: holdfast-lin under the system's temporary directory, kept
// after the test so that the failure's files are there to read; see Keep
// for a directory that is another user's).
const OutDirEnv = "HOLDFAST_LIN_OUT"

// Stats counts the operations of a history.
type Stats struct {
	// Operations counts them all; Failed those whose outcome is unknown
	// (Settle and Lost included, but not a settlement seen to commit).
	Operations, Failed int
	// Grants are acquires that returned a grant, Refused the refused
	// TryAcquires, Releases the releases that returned, Reads the reads.
	Grants, Refused, Releases, Reads int
	// Settles and Lost count those operations; Settled counts the
	// settlements seen to commit (Recorder.Settled).
	Settles, Settled, Lost int
}

// String gives every count of s on one line, for a test's log.
func (s Stats) String() string {
	return fmt.Sprintf("%d operations: %d grants, %d refused, %d releases, %d reads, %d failed (%d settlements, %d of them seen to commit, %d lost grants)",
		s.Operations, s.Grants, s.Refused, s.Releases, s.Reads, s.Failed, s.Settles, s.Settled, s.Lost)
}

// Add returns the sum of s and o.
func (s Stats) Add(o Stats) Stats {
	return Stats{Operations: s.Operations + o.Operations, Failed: s.Failed + o.Failed, Grants: s.Grants + o.Grants,
		Refused: s.Refused + o.Refused, Releases: s.Releases + o.Releases, Reads: s.Reads + o.Reads,
		Settles: s.Settles + o.Settles, Settled: s.Settled + o.Settled, Lost: s.Lost + o.Lost}
}

// Count counts the operations of a history.
func Count(ops []porcupine.Operation) Stats {
	var s Stats
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		s.Operations++
		switch {
		case in.Kind == Settle:
			s.Settles++
			if !out.Unknown {
				s.Settled++
			}
		case in.Kind == Lost:
			s.Lost++
		case out.Unknown:
		case in.Kind == Read:
			s.Reads++
		case in.Kind == Release:
			s.Releases++
		case out.Refused:
			s.Refused++
		default:
			s.Grants++
		}
		if out.Unknown {
			s.Failed++
		}
	}
	return s
}

// Check checks a history against model, giving up after timeout (the
// result is then porcupine.Unknown). The information returned is what
// Visualize draws.
func Check(model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	return porcupine.CheckOperationsVerbose(model, ops, timeout)
}

// Visualize writes porcupine's HTML visualization of a checked history to
// dir/name.html and returns its path.
func Visualize(model porcupine.Model, info porcupine.LinearizationInfo, dir, name string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, sanitize(name)+".html")
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		return "", err
	}
	return path, nil
}

func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
}

// TB is the part of testing.TB that Verify uses.
type TB interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
}

// Verify checks ops against model within timeout and reports to tb: it
// logs the history's counts and how long the check took; on a rejected history (or one the checker
// could not decide in time) it writes the visualization (to the directory
// named by HOLDFAST_LIN_OUT, else tb.TempDir()), and fails tb naming its
// path and the seed that replays the run. It reports whether the history
// was accepted.
func Verify(tb TB, label string, model porcupine.Model, ops []porcupine.Operation, timeout time.Duration, seed int64) bool {
	tb.Helper()
	start := time.Now()
	res, info := Check(model, ops, timeout)
	tb.Logf("%s: %v: %s (checked in %v)", label, Count(ops), res, time.Since(start).Round(time.Millisecond))
	if res == porcupine.Ok {
		return true
	}
	dir := os.Getenv(OutDirEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "holdfast-lin")
	}
	path, saved := Keep(model, info, ops, dir, fmt.Sprintf("%s-seed%d", label, seed))
	what := "not linearizable"
	if res == porcupine.Unknown {
		what = fmt.Sprintf("not decided within %v", timeout)
	}
	tb.Errorf("%s: history %s (seed %d); visualization: %s; history: %s\n%s", label, what, seed, path, saved, Explain(model, info, ops))
	return false
}

// Keep writes the visualization of a checked history (Visualize) and the
// history itself (Save) to dir under name, or, when dir is another user's
// and not writable here (a shared default under the temporary directory),
// to testkit.OwnDir(dir). It returns both paths; one that could not be
// written is "(not written: <why>)".
func Keep(model porcupine.Model, info porcupine.LinearizationInfo, ops []porcupine.Operation, dir, name string) (vis, hist string) {
	vis, err := Visualize(model, info, dir, name)
	if errors.Is(err, fs.ErrPermission) {
		dir = testkit.OwnDir(dir)
		vis, err = Visualize(model, info, dir, name)
	}
	if err != nil {
		vis = fmt.Sprintf("(not written: %v)", err)
	}
	hist, err = Save(ops, dir, name)
	if err != nil {
		hist = fmt.Sprintf("(not written: %v)", err)
	}
	return vis, hist
}

// Explain describes where each partition of a rejected history stopped
// being linearizable: the end of its longest linearizable prefix, and the
// operation that returned first among those it could not place.
func Explain(model porcupine.Model, info porcupine.LinearizationInfo, ops []porcupine.Operation) string {
	parts := model.Partition
	if parts == nil {
		parts = func(h []porcupine.Operation) [][]porcupine.Operation { return [][]porcupine.Operation{h} }
	}
	partials := info.PartialLinearizationsOperations()
	var b strings.Builder
	for p, part := range parts(ops) {
		if p >= len(partials) {
			break
		}
		var longest []porcupine.Operation
		for _, l := range partials[p] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(part) {
			continue
		}
		placed := map[int]bool{}
		for _, op := range longest {
			placed[op.Input.(Input).ID] = true
		}
		var stuck *porcupine.Operation
		for i := range part {
			if !placed[part[i].Input.(Input).ID] && (stuck == nil || part[i].Return < stuck.Return) {
				stuck = &part[i]
			}
		}
		fmt.Fprintf(&b, "%s: %d of %d operations linearized; the last ones:\n", part[0].Input.(Input).Name, len(longest), len(part))
		for _, op := range longest[max(0, len(longest)-4):] {
			fmt.Fprintf(&b, "  [%d, %d] worker %d: %s\n", op.Call, op.Return, op.ClientId, model.DescribeOperation(op.Input, op.Output))
		}
		if stuck != nil {
			fmt.Fprintf(&b, "  cannot follow: [%d, %d] worker %d: %s\n", stuck.Call, stuck.Return, stuck.ClientId,
				model.DescribeOperation(stuck.Input, stuck.Output))
		}
	}
	return b.String()
}
