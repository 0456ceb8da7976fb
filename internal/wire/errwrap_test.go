package wire

import (
	"errors"
	"fmt"
	"testing"
)

// Errors shaped like the coordinator's: a sentinel, and a typed error
// that matches a sentinel through Is.
var (
	errLeaseLost      = errors.New("holdfast: lease lost")
	errSessionExpired = errors.New("holdfast: session expired")
	errLeaseExpiring  = errors.New("holdfast: lease about to expire")
)

type expiringError struct{ left string }

func (e *expiringError) Error() string { return fmt.Sprintf("%s: %s left", errLeaseExpiring, e.left) }

func (e *expiringError) Is(target error) bool { return target == errLeaseExpiring }

// TestWrapNamesThePackageOnce checks Wrap's message and that every error
// in the chain stays visible to errors.Is and errors.As.
func TestWrapNamesThePackageOnce(t *testing.T) {
	fsmErr := errors.New("fsm: no such session")
	expiring := &expiringError{left: "1s"}
	for _, tc := range []struct {
		err  error
		want string
		is   []error
	}{
		{Wrap(errLeaseLost, errSessionExpired), "holdfast: lease lost: session expired",
			[]error{errLeaseLost, errSessionExpired}},
		{Wrap(ErrRejected, ErrNoSession, fsmErr), "holdfast: command rejected: no such session: fsm: no such session",
			[]error{ErrRejected, ErrNoSession, fsmErr}},
		{Wrap(errLeaseLost, nil), "holdfast: lease lost", []error{errLeaseLost}},
		{Wrap(errLeaseLost, expiring), "holdfast: lease lost: lease about to expire: 1s left",
			[]error{errLeaseLost, errLeaseExpiring}},
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
	var ee *expiringError
	if !errors.As(Wrap(errLeaseLost, expiring), &ee) || ee != expiring {
		t.Error("errors.As does not find the wrapped *expiringError")
	}
}
