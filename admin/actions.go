package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// Options configure New.
type Options struct {
	// Authorize decides whether a request may perform an action (the POST
	// endpoints, which change the cluster); it returns nil to allow it, or
	// the reason it refuses (answered 403). Nil serves no action at all:
	// every POST is refused, as by Handler. RequireClientCertificate and
	// LoopbackOnly are the usual choices.
	Authorize func(r *http.Request) error
	// ActionTimeout bounds one action (the request's own context also
	// ends it); zero means DefaultActionTimeout.
	ActionTimeout time.Duration
}

// DefaultActionTimeout bounds an action when Options.ActionTimeout is zero.
const DefaultActionTimeout = 2 * time.Minute

// maxActionBody bounds an action's JSON request body.
const maxActionBody = 64 << 10

// RequireClientCertificate authorises a request that came over TLS with a
// client certificate the server verified (http.Server's
// tls.Config.ClientCAs with RequireAndVerifyClientCert or
// VerifyClientCertIfGiven): any certificate of the cluster's CA, as the
// read endpoints of such a server already require.
func RequireClientCertificate(r *http.Request) error {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return errors.New("actions need HTTPS with a client certificate the node verifies (holdfastctl -ca, -cert, -key)")
	}
	return nil
}

// LoopbackOnly authorises a request from a loopback address: for a node
// served without TLS (a trial on one machine), where nothing else could
// tell an operator from anyone who reaches the port.
func LoopbackOnly(r *http.Request) error {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("actions are served to loopback clients only without TLS (request from %s)", r.RemoteAddr)
	}
	return nil
}

// action is one POST endpoint that changes the cluster: run decodes its
// request from body (after the handler checked the confirmation) and
// performs it.
type action struct {
	run func(ctx context.Context, c *coordinator.Coordinator, body []byte) (any, error)
}

// typedAction makes an action of f over its JSON request type.
func typedAction[Req any, Rep any](f func(ctx context.Context, c *coordinator.Coordinator, req Req) (Rep, error)) action {
	return action{run: func(ctx context.Context, c *coordinator.Coordinator, body []byte) (any, error) {
		var req Req
		if err := decodeStrict(body, &req); err != nil {
			return nil, &statusError{http.StatusBadRequest, "bad request body: " + err.Error()}
		}
		return f(ctx, c, req)
	}}
}

// statusError is an action's refusal with its HTTP status.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

// Confirmation is the field every action request carries: the name of
// the node the action is meant for, which must be the answering node's,
// so that a mistyped address never acts on the wrong node.
type Confirmation struct {
	Confirm string `json:"confirm"`
}

// serveAction answers a POST to an action: authorisation, the body, the
// confirmation, then the action itself under ActionTimeout.
func (h *handler) serveAction(w http.ResponseWriter, r *http.Request, a action) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: use POST", r.Method))
		return
	}
	if h.opts.Authorize == nil {
		writeError(w, http.StatusForbidden, "this admin handler serves no actions (read-only)")
		return
	}
	if err := h.opts.Authorize(r); err != nil {
		writeError(w, http.StatusForbidden, "not authorised: "+err.Error())
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxActionBody+1))
	if err != nil || len(body) > maxActionBody {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("request body unreadable or over %d bytes", maxActionBody))
		return
	}
	var conf Confirmation
	if err := json.Unmarshal(body, &conf); err != nil {
		writeError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	if name := h.c.NodeName(); conf.Confirm != name {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("confirmation %q does not name this node, %q: nothing done", conf.Confirm, name))
		return
	}
	timeout := h.opts.ActionTimeout
	if timeout <= 0 {
		timeout = DefaultActionTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), byKey{}, requester(r)), timeout)
	defer cancel()
	rep, err := a.run(ctx, h.c, body)
	if err != nil {
		writeError(w, actionStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// actionStatus is the HTTP status of an action's error.
func actionStatus(err error) int {
	var se *statusError
	switch {
	case errors.As(err, &se):
		return se.code
	case errors.Is(err, coordinator.ErrLeaveRefused), errors.Is(err, coordinator.ErrOperationRefused):
		return http.StatusConflict
	case errors.Is(err, coordinator.ErrShutdown):
		return http.StatusServiceUnavailable
	case errors.Is(err, coordinator.ErrNoLeader), errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// decodeStrict decodes a JSON object into v, refusing unknown fields and
// trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON object")
	}
	return nil
}

// leave is POST /v1/leave.
func leave(ctx context.Context, c *coordinator.Coordinator, req LeaveRequest) (LeaveResult, error) {
	res := LeaveResult{Name: c.NodeName(), ID: c.ID()}
	select {
	case <-c.Done():
		return res, coordinator.ErrShutdown
	default:
	}
	if err := c.Leave(ctx, coordinator.LeaveOptions{Force: req.Force}); err != nil {
		select {
		case <-c.Done(): // past the check: the node stopped, keeping its place
			return res, &statusError{http.StatusInternalServerError, "the node stopped but may still be in the raft configuration: " + err.Error()}
		default:
			return res, err // refused or not checked: nothing changed
		}
	}
	res.Left = true
	return res, nil
}
