package wire

import (
	"context"
	"fmt"
	"strconv"

	"github.com/holdfast-go/holdfast/transport"
)

// HandlerFunc serves one method: it gets the request's msgpack body and
// returns the reply's, or an error (mapped through ToRemote).
type HandlerFunc func(ctx context.Context, body []byte) ([]byte, error)

// Dispatcher routes inbound calls to the handler registered for their
// method. Register every handler with Handle before the dispatcher serves
// its first call (before it is given to transport.SetHandler); it is then
// safe for concurrent use.
type Dispatcher struct {
	closing  func() bool
	handlers map[string]HandlerFunc
}

// NewDispatcher returns a dispatcher without handlers. While closing
// reports true (nil: never), every call is refused with CodeShutdown.
func NewDispatcher(closing func() bool) *Dispatcher {
	return &Dispatcher{closing: closing, handlers: map[string]HandlerFunc{}}
}

// Handle registers h for method. It panics if method already has a
// handler: two parts answering one method is a wiring bug.
func (d *Dispatcher) Handle(method string, h HandlerFunc) {
	if _, dup := d.handlers[method]; dup {
		panic(fmt.Sprintf("wire: two handlers for method %q", method))
	}
	d.handlers[method] = h
}

// ServeRPC answers one inbound call (a transport.HandlerFunc): CodeShutdown
// while closing, CodeBadMethod for a method without a handler, otherwise
// the handler's reply, its error mapped through ToRemote.
func (d *Dispatcher) ServeRPC(ctx context.Context, method string, body []byte) ([]byte, error) {
	if d.closing != nil && d.closing() {
		return nil, &transport.RemoteError{Code: CodeShutdown, Message: ErrShutdown.Error()}
	}
	h, ok := d.handlers[method]
	if !ok {
		return nil, &transport.RemoteError{Code: CodeBadMethod, Message: "unknown method " + strconv.Quote(method)}
	}
	rep, err := h(ctx, body)
	if err != nil {
		return nil, ToRemote(err)
	}
	return rep, nil
}

// Typed adapts a handler of decoded requests: it decodes the body into a
// Req (a decoding error is returned as is) and encodes the reply.
func Typed[Req, Rep any](h func(ctx context.Context, req Req) (Rep, error)) HandlerFunc {
	return func(ctx context.Context, body []byte) ([]byte, error) {
		var req Req
		if err := transport.Decode(body, &req); err != nil {
			return nil, err
		}
		rep, err := h(ctx, req)
		if err != nil {
			return nil, err
		}
		return transport.Encode(rep)
	}
}
