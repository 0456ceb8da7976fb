package session

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/wire"
)

// TestEndReason: the reason label is the first known cause a grant's end
// wraps, "lost" for any other; a nil *EndMetrics records nothing.
func TestEndReason(t *testing.T) {
	for cause, want := range map[error]string{
		fmt.Errorf("%w by this node", wire.ErrReleased): "resigned",
		wire.ErrRevoked:                          "revoked",
		wire.ErrShutdown:                         "shutdown",
		wire.Wrap(wire.ErrLeaseLost, ErrExpired): "expired",
		wire.ErrLeaseLost:                        "lost",
		errors.New("other"):                      "lost",
	} {
		if got := EndReason(cause); got != want {
			t.Errorf("EndReason(%v) = %q, want %q", cause, got, want)
		}
	}
	var none *EndMetrics
	none.Ended("leader", time.Time{}, nil)
	if none.Collectors() != nil {
		t.Fatal("a nil *EndMetrics has collectors")
	}
}
