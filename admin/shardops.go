package admin

import (
	"context"
	"net/http"

	"github.com/holdfast-go/holdfast/coordinator"
)

// PinShardRequest is the body of POST /v1/shards/pin and /v1/shards/move:
// pin (or move now) shard Shard to node Node, by name.
type PinShardRequest struct {
	Confirmation
	Shard uint32 `json:"shard"`
	Node  string `json:"node"`
}

// UnpinShardRequest is the body of POST /v1/shards/unpin.
type UnpinShardRequest struct {
	Confirmation
	Shard uint32 `json:"shard"`
}

// PinRow is one pin in /v1/shards: shard Shard is kept on node Node, or,
// with Once, is being moved there (coordinator.ShardPin).
type PinRow struct {
	Shard uint32 `json:"shard"`
	Node  string `json:"node"`
	Once  bool   `json:"once"`
}

// RuleRequest is the body of POST /v1/shards/rule: set the placement rule
// Name to Rule, "FIRST-LAST:TAG[,TAG...]" (or "SHARD:TAG..."): only nodes
// carrying every tag (Config.Shards.Tags, and "zone=ZONE") may own those
// shards.
type RuleRequest struct {
	Confirmation
	Name string `json:"name"`
	Rule string `json:"rule"`
}

// UnruleRequest is the body of POST /v1/shards/unrule: remove rule Name.
type UnruleRequest struct {
	Confirmation
	Name string `json:"name"`
}

// RuleRow is one placement rule in /v1/shards (coordinator.ShardRule):
// only nodes tagged with every tag of Require may own shards First to Last.
type RuleRow struct {
	Name    string   `json:"name"`
	First   uint32   `json:"first"`
	Last    uint32   `json:"last"`
	Require []string `json:"require"`
}

// PlanResult answers GET /v1/shards/plan: what the raft leader's balancer
// would do in its next round (nothing is committed), and why. Waiting says
// why it would not plan now ("" when it would).
type PlanResult struct {
	PlacementRow
	Leader  string `json:"leader"`
	Waiting string `json:"waiting"`
}

// shardOperations are the shard placement actions' endpoints.
func shardOperations(into map[string]action) {
	pin := func(what string) action {
		return typedAction(func(ctx context.Context, c *coordinator.Coordinator, req PinShardRequest) (OperationResult, error) {
			if err := needs("node", req.Node); err != nil {
				return OperationResult{}, err
			}
			return operate(ctx, c, coordinator.Operation{Action: what, Target: req.Node, Shard: coordinator.ShardID(req.Shard)})
		})
	}
	into["/v1/shards/pin"] = pin(coordinator.ActionPinShard)
	into["/v1/shards/move"] = pin(coordinator.ActionMoveShard)
	into["/v1/shards/unpin"] = typedAction(func(ctx context.Context, c *coordinator.Coordinator, req UnpinShardRequest) (OperationResult, error) {
		return operate(ctx, c, coordinator.Operation{Action: coordinator.ActionUnpinShard, Shard: coordinator.ShardID(req.Shard)})
	})
	into["/v1/shards/rule"] = typedAction(func(ctx context.Context, c *coordinator.Coordinator, req RuleRequest) (OperationResult, error) {
		if err := needs("name", req.Name); err != nil {
			return OperationResult{}, err
		}
		if err := needs("rule", req.Rule); err != nil {
			return OperationResult{}, err
		}
		return operate(ctx, c, coordinator.Operation{Action: coordinator.ActionSetShardRule, Target: req.Name, Rule: req.Rule})
	})
	into["/v1/shards/unrule"] = typedAction(func(ctx context.Context, c *coordinator.Coordinator, req UnruleRequest) (OperationResult, error) {
		if err := needs("name", req.Name); err != nil {
			return OperationResult{}, err
		}
		return operate(ctx, c, coordinator.Operation{Action: coordinator.ActionClearShardRule, Target: req.Name})
	})
}

// ruleRows lists c's placement rules.
func ruleRows(c *coordinator.Coordinator) []RuleRow {
	rules := c.ShardRules()
	out := make([]RuleRow, len(rules))
	for i, r := range rules {
		out[i] = RuleRow{Name: r.Name, First: uint32(r.First), Last: uint32(r.Last), Require: r.Require}
	}
	return out
}

// plan is GET /v1/shards/plan, answered through the raft leader.
func (h *handler) plan(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), DefaultActionTimeout)
	defer cancel()
	res, err := h.c.Operate(ctx, coordinator.Operation{Action: coordinator.ActionPlanShards, By: requester(r)})
	if err != nil {
		writeError(w, actionStatus(err), err.Error())
		return
	}
	out := PlanResult{Leader: res.Leader.Name}
	if p := res.Plan; p != nil {
		out.PlacementRow = *rowOf(*p)
		out.Waiting = p.Waiting
	}
	writeJSON(w, http.StatusOK, out)
}

// pinRows lists c's pins.
func pinRows(c *coordinator.Coordinator) []PinRow {
	pins := c.ShardPins()
	out := make([]PinRow, len(pins))
	for i, p := range pins {
		out[i] = PinRow{Shard: uint32(p.Shard), Node: p.Node, Once: p.Once}
	}
	return out
}
