package fsm

import (
	"fmt"
	"slices"
	"strings"
)

// RuleCommandVersion is the version byte in front of an OpShardRule and of
// an OpSessionCreate whose session carries tags (SessionCmd.Tags), with a
// msgpack body. A release before it reads neither (ErrUnknownVersion)
// rather than place shards without the rules or the tags: a mixed cluster
// must finish upgrading before an operator sets a rule or a node starts
// with tags. A create without tags is written as before.
const RuleCommandVersion = 6

// SnapshotRuleVersion is the version byte in front of a snapshot that
// holds a placement rule or a session with tags; pins and holder values
// may appear under it too. A release before it refuses it
// (ErrUnknownVersion) rather than restore it without them.
const SnapshotRuleVersion = 4

// Bounds of placement rules and tags.
const (
	// MaxRules bounds the rules the state keeps.
	MaxRules = 256
	// MaxTags bounds a rule's required tags and a session's tags.
	MaxTags = 16
	// MaxTagLength bounds a tag's length in bytes.
	MaxTagLength = 64
)

// RuleCmd is the body of OpShardRule: an operator's placement rule, set
// or cleared by name.
type RuleCmd struct {
	// Name names the rule.
	Name string `msgpack:"name"`
	// First and Last bound the shards it covers (inclusive).
	First uint32 `msgpack:"first"`
	Last  uint32 `msgpack:"last"`
	// Require lists the tags a shard's owner must carry.
	Require []string `msgpack:"require,omitempty"`
	// Clear removes the rule Name instead of setting it.
	Clear bool `msgpack:"clear,omitempty"`
}

// Rule is one placement rule as the state keeps it: only a session
// carrying every tag in Require (Session.Tags) may own a shard in
// [First, Last]. The leader's balancer reads the rules on every round.
type Rule struct {
	Name    string   `msgpack:"name"`
	First   uint32   `msgpack:"first"`
	Last    uint32   `msgpack:"last"`
	Require []string `msgpack:"require"`
	// Index is the raft index at which the rule was set.
	Index uint64 `msgpack:"index"`
}

// ValidTag reports why tag cannot be a tag ("" when it can): 1 to
// MaxTagLength bytes of printable ASCII without spaces or commas.
func ValidTag(tag string) string {
	if tag == "" || len(tag) > MaxTagLength {
		return fmt.Sprintf("a tag has 1 to %d bytes", MaxTagLength)
	}
	for _, c := range []byte(tag) {
		if c <= ' ' || c > '~' || c == ',' {
			return fmt.Sprintf("tag %q: only printable ASCII without spaces or commas", tag)
		}
	}
	return ""
}

// checkTags validates a list of tags (what names the list in the error).
func checkTags(what string, tags []string, atLeastOne bool) error {
	if len(tags) > MaxTags || atLeastOne && len(tags) == 0 {
		return fmt.Errorf("%w: %s: 1 to %d tags", ErrMalformed, what, MaxTags)
	}
	for _, t := range tags {
		if why := ValidTag(t); why != "" {
			return fmt.Errorf("%w: %s: %s", ErrMalformed, what, why)
		}
	}
	return nil
}

// decodeRuled decodes the body of a command written under
// RuleCommandVersion: an OpShardRule, or an OpSessionCreate with tags.
func decodeRuled(c Command, body []byte) (Command, error) {
	switch c.Op {
	case OpShardRule:
		c.Rule = new(RuleCmd)
		if err := decodeBody(body, c.Rule); err != nil {
			return Command{}, err
		}
	case OpSessionCreate:
		c.Session = new(SessionCmd)
		if err := decodeBody(body, c.Session); err != nil {
			return Command{}, err
		}
		if len(c.Session.Tags) == 0 {
			return Command{}, fmt.Errorf("%w: a session create without tags under version %d", ErrMalformed, RuleCommandVersion)
		}
	default:
		return Command{}, fmt.Errorf("%w: %s under version %d", ErrMalformed, c.Op, RuleCommandVersion)
	}
	return c, nil
}

// carriesRules reports whether c is written under RuleCommandVersion.
func (c Command) carriesRules() bool {
	return c.Op == OpShardRule || c.Op == OpSessionCreate && c.Session != nil && len(c.Session.Tags) > 0
}

// applyShardRule sets or clears a rule: Result.Count is 1 when the state
// changed. A rule outside the table, without tags, with a bad tag or
// name, or beyond MaxRules is an error; clearing an absent rule changes
// nothing.
func applyShardRule(st state, index uint64, c *RuleCmd) (state, Result, error) {
	if err := validName("rule name", c.Name); err != nil {
		return st, Result{}, err
	}
	i, had := slices.BinarySearchFunc(st.Rules, c.Name, func(r Rule, name string) int { return strings.Compare(r.Name, name) })
	if c.Clear {
		if !had {
			return st, Result{}, nil
		}
		st.Rules = slices.Delete(slices.Clone(st.Rules), i, i+1)
		return st, Result{Count: 1}, nil
	}
	if len(st.Shards) == 0 || c.First > c.Last || c.Last >= st.Cluster.Shards {
		return st, Result{}, fmt.Errorf("%w: rule %q covers shards %d-%d, the cluster has %d", ErrMalformed, c.Name, c.First, c.Last, st.Cluster.Shards)
	}
	if err := checkTags("rule "+c.Name, c.Require, true); err != nil {
		return st, Result{}, err
	}
	r := Rule{Name: c.Name, First: c.First, Last: c.Last, Require: slices.Clone(c.Require), Index: index}
	next := slices.Clone(st.Rules)
	switch {
	case had && next[i].First == r.First && next[i].Last == r.Last && slices.Equal(next[i].Require, r.Require):
		return st, Result{}, nil
	case had:
		next[i] = r
	case len(next) >= MaxRules:
		return st, Result{}, fmt.Errorf("%w: more than %d rules", ErrTooLarge, MaxRules)
	default:
		next = slices.Insert(next, i, r)
	}
	st.Rules = next
	return st, Result{Count: 1}, nil
}

// rulesFromWire restores a snapshot's rules, which must be sorted by
// unique name and valid for the table.
func rulesFromWire(st *state, rules []Rule) error {
	if len(rules) > MaxRules {
		return fmt.Errorf("%w: %d rules in snapshot", ErrMalformed, len(rules))
	}
	for i, r := range rules {
		if validName("rule name", r.Name) != nil || i > 0 && rules[i-1].Name >= r.Name || len(st.Shards) == 0 ||
			r.First > r.Last || r.Last >= st.Cluster.Shards || checkTags("rule", r.Require, true) != nil {
			return fmt.Errorf("%w: rule %q is inconsistent", ErrMalformed, r.Name)
		}
	}
	st.Rules = rules
	if len(rules) == 0 {
		st.Rules = nil
	}
	return nil
}

// carriesRules reports whether a snapshot of st must be written under
// SnapshotRuleVersion: it holds a rule or a session with tags.
func (st state) carriesRules() bool {
	if len(st.Rules) > 0 {
		return true
	}
	for _, s := range st.Sessions {
		if len(s.Tags) > 0 {
			return true
		}
	}
	return false
}

// Rules returns every placement rule, in name order. The slice is the
// view's own: do not modify it.
func (v *View) Rules() []Rule { return v.st.Rules }

// sessionsTagged reports whether a session of a snapshot carries tags.
func sessionsTagged(ss []Session) bool {
	for _, s := range ss {
		if len(s.Tags) > 0 {
			return true
		}
	}
	return false
}
