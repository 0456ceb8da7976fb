package leases

import (
	"errors"
	"strings"

	"github.com/holdfast-go/holdfast/fsm"
)

// SemError maps a refusal of the state machine (returned locally, or
// forwarded with its own wire code) to full (fsm.ErrSemFull) or limit
// (fsm.ErrSemLimit), with the state machine's detail ("2 of 2 permits of x
// held") and the original refusal still in the chain. Other errors are
// returned as they are.
func SemError(err, full, limit error) error {
	for _, k := range []struct{ fsmErr, ours error }{{fsm.ErrSemFull, full}, {fsm.ErrSemLimit, limit}} {
		if errors.Is(err, k.fsmErr) {
			_, detail, _ := strings.Cut(err.Error(), k.fsmErr.Error())
			return &semRefusal{kind: k.ours, detail: detail, err: err}
		}
	}
	return err
}

// semRefusal is a refused semaphore acquire: kind, then the detail.
type semRefusal struct {
	kind   error
	detail string
	err    error // the refusal as the state machine or the leader gave it
}

func (e *semRefusal) Error() string { return e.kind.Error() + e.detail }

// Unwrap returns the kind and the original refusal.
func (e *semRefusal) Unwrap() []error { return []error{e.kind, e.err} }
