package coordinator

import (
	"errors"
	"testing"
	"time"
)

// TestWrapNamesThePackageOnce checks wrap's message and that every error
// in the chain stays visible to errors.Is and errors.As.
func TestWrapNamesThePackageOnce(t *testing.T) {
	fsmErr := errors.New("fsm: no such session")
	expiring := &ExpiringError{Remaining: time.Second, Margin: 2 * time.Second}
	for _, tc := range []struct {
		err  error
		want string
		is   []error
	}{
		{wrap(ErrLeaseLost, ErrSessionExpired), "holdfast: lease lost: session expired",
			[]error{ErrLeaseLost, ErrSessionExpired}},
		{wrap(ErrRejected, ErrNoSession, fsmErr), "holdfast: command rejected: no such session: fsm: no such session",
			[]error{ErrRejected, ErrNoSession, fsmErr}},
		{wrap(ErrLeaseLost, nil), "holdfast: lease lost", []error{ErrLeaseLost}},
		{wrap(ErrLeaseLost, expiring), "holdfast: lease lost: lease about to expire: 1s left, margin 2s",
			[]error{ErrLeaseLost, ErrLeaseExpiring}},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("message %q, want %q", got, tc.want)
		}
		for _, target := range tc.is {
			if !errors.Is(tc.err, target) {
				t.Errorf("%q: errors.Is(%q) is false", tc.err, target)
			}
		}
	}
	var ee *ExpiringError
	if !errors.As(wrap(ErrLeaseLost, expiring), &ee) || ee != expiring {
		t.Error("errors.As does not find the wrapped *ExpiringError")
	}
}
