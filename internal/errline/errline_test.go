package errline

import (
	"errors"
	"io"
	"os"
	"testing"
)

// TestJoin: one line, "; " between the errors, nil ones dropped, each
// matched by errors.Is; nil when nothing is left.
func TestJoin(t *testing.T) {
	err := Join(io.EOF, nil, os.ErrNotExist)
	if err.Error() != "EOF; file does not exist" || !errors.Is(err, io.EOF) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Join: %q", err)
	}
	if Join(nil, nil) != nil || Join() != nil {
		t.Error("Join of nothing is not nil")
	}
}
