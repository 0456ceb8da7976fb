package viewstream

import (
	"context"

	"github.com/holdfast-go/holdfast/fsm"
)

// Stream feeds ch (capacity 1) until ctx ends or stop is closed, then
// closes ch. It calls next on the current view (from views) and on every
// later one; a value next reports ok is sent if it is the first or its key
// differs from the last one sent. A value not yet received is replaced, so
// a slow reader may miss values but always receives the latest. Stream
// blocks: run it in a goroutine the caller joins.
func Stream[T any, K comparable](ctx context.Context, stop <-chan struct{}, views func() *fsm.View, ch chan T,
	next func(*fsm.View) (T, K, bool)) {
	defer close(ch)
	var last K
	first := true
	for {
		v := views()
		if val, key, ok := next(v); ok && (first || key != last) {
			select { // keep only the newest undelivered value
			case <-ch:
			default:
			}
			ch <- val
			last, first = key, false
		}
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-v.Changed():
		}
	}
}
