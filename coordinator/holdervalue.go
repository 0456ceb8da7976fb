package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/holdfast-go/holdfast/fsm"
)

// MaxValueLength is the longest holder value, in bytes.
const MaxValueLength = fsm.MaxValueLength

// ErrInvalidValue is wrapped by the error of WithValue and Lease.SetValue
// for a holder value longer than MaxValueLength or not valid UTF-8.
var ErrInvalidValue = errors.New("holdfast: invalid holder value")

// An AcquireOption tunes Acquire and TryAcquire.
type AcquireOption interface{ apply(*acquireOpts) }

type acquireOpts struct {
	value string
	err   error
}

type optionFunc func(*acquireOpts)

func (f optionFunc) apply(o *acquireOpts) { f(o) }

// WithValue attaches value to the lease's grant: every replica shows it in
// the grant's Holder (Holder, Observe, Leases, the admin /v1/leases and
// holdfastctl leases), so that the holder can publish where it serves or
// what it runs, as etcd's Campaign value or Consul's lock value. A waiter's
// value is kept in the queue and shown once it is granted. At most
// MaxValueLength bytes of UTF-8; anything else fails the acquire with
// ErrInvalidValue before it is sent. Lease.SetValue changes it later.
func WithValue(value string) AcquireOption {
	return optionFunc(func(o *acquireOpts) {
		o.value = value
		o.err = checkValue(value)
	})
}

// acquireOptions applies opts.
func acquireOptions(opts []AcquireOption) (acquireOpts, error) {
	var o acquireOpts
	for _, opt := range opts {
		opt.apply(&o)
		if o.err != nil {
			return o, o.err
		}
	}
	return o, nil
}

// checkValue wraps a holder value's fault in ErrInvalidValue.
func checkValue(value string) error {
	switch {
	case len(value) > MaxValueLength:
		return fmt.Errorf("%w: %d bytes; at most %d", ErrInvalidValue, len(value), MaxValueLength)
	case fsm.CheckValue(value) != nil:
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidValue)
	}
	return nil
}

// Value returns the lease's holder value: the one WithValue gave the
// acquire, or the last one SetValue committed ("" for none).
func (l *Lease) Value() string { return l.g.Value() }

// SetValue changes the lease's holder value without a new grant: the
// token stays the same, and every replica then shows the new value with
// the holder (etcd's Proclaim). It returns once the change has committed,
// so a Sync then Holder on any node reads it. It fails with an error
// wrapping ErrLeaseLost once the lease has ended (this node's belief, or
// the cluster's state: another holder, a forced release), with
// ErrInvalidValue for a value that is too long or not UTF-8, or with ctx's
// error (the change may still commit; a later SetValue wins over it). Of
// concurrent calls, the one that numbered its change last wins.
func (l *Lease) SetValue(ctx context.Context, value string) error {
	if err := checkValue(value); err != nil {
		return err
	}
	return l.g.SetValue(ctx, value)
}
