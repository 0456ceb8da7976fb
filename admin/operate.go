package admin

import (
	"context"
	"fmt"
	"net/http"

	"github.com/holdfast-go/holdfast/coordinator"
)

// byKey carries who asked for an action (requester) in its context.
type byKey struct{}

// requester says who sent r, for the raft leader's log: the verified
// client certificate's common name, else the remote address.
func requester(r *http.Request) string {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		return fmt.Sprintf("client certificate %q from %s", r.TLS.PeerCertificates[0].Subject.CommonName, r.RemoteAddr)
	}
	return r.RemoteAddr + " (no client certificate)"
}

// byOf returns who asked for the action running under ctx.
func byOf(ctx context.Context) string {
	by, _ := ctx.Value(byKey{}).(string)
	return by
}

// operate runs op through coordinator.Operate and turns its result into
// the schema's.
func operate(ctx context.Context, c *coordinator.Coordinator, op coordinator.Operation) (OperationResult, error) {
	op.By = byOf(ctx)
	res, err := c.Operate(ctx, op)
	if err != nil {
		return OperationResult{}, err
	}
	return OperationResult{Action: op.Action, Target: op.Target, Leader: res.Leader.Name, LeaderID: res.Leader.ID,
		Node: res.Node.Name, NodeID: res.Node.ID, Token: res.Token, Graceful: res.Graceful, Promoted: res.Promoted,
		Message: res.Message}, nil
}

// needs refuses an empty field of a request body.
func needs(field, value string) error {
	if value == "" {
		return &statusError{http.StatusBadRequest, fmt.Sprintf("bad request body: %q is required", field)}
	}
	return nil
}

// operations are the operator actions' endpoints.
func operations() map[string]action {
	drain := func(what string) action {
		return typedAction(func(ctx context.Context, c *coordinator.Coordinator, req DrainRequest) (OperationResult, error) {
			if err := needs("node", req.Node); err != nil {
				return OperationResult{}, err
			}
			return operate(ctx, c, coordinator.Operation{Action: what, Target: req.Node})
		})
	}
	return map[string]action{
		"/v1/drain":   drain(coordinator.ActionDrain),
		"/v1/undrain": drain(coordinator.ActionUndrain),
		"/v1/leases/release": typedAction(func(ctx context.Context, c *coordinator.Coordinator, req ReleaseLeaseRequest) (OperationResult, error) {
			if err := needs("name", req.Name); err != nil {
				return OperationResult{}, err
			}
			return operate(ctx, c, coordinator.Operation{Action: coordinator.ActionReleaseLease, Target: req.Name})
		}),
		"/v1/raft/step-down": typedAction(func(ctx context.Context, c *coordinator.Coordinator, _ StepDownRequest) (OperationResult, error) {
			return operate(ctx, c, coordinator.Operation{Action: coordinator.ActionStepDown})
		}),
		"/v1/raft/remove-peer": typedAction(func(ctx context.Context, c *coordinator.Coordinator, req RemovePeerRequest) (OperationResult, error) {
			if err := needs("node", req.Node); err != nil {
				return OperationResult{}, err
			}
			return operate(ctx, c, coordinator.Operation{Action: coordinator.ActionRemovePeer, Target: req.Node, Force: req.Force})
		}),
	}
}

// semaphores is GET /v1/semaphores.
func (h *handler) semaphores(w http.ResponseWriter, _ *http.Request) {
	sems := h.c.Semaphores()
	out := SemaphoreList{Semaphores: make([]SemaphoreRow, 0, len(sems))}
	for _, s := range sems {
		row := SemaphoreRow{Name: s.Name, Limit: s.Limit, Holders: make([]PermitRow, 0, len(s.Holders)), Waiters: s.Waiters}
		for _, p := range s.Holders {
			row.Holders = append(row.Holders, PermitRow{Holder: p.Node.Name, HolderID: p.Node.ID, Session: p.Session, Token: p.Token})
		}
		out.Semaphores = append(out.Semaphores, row)
	}
	writeJSON(w, http.StatusOK, out)
}
