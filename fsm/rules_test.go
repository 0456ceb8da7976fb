package fsm

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func rule(name string, first, last uint32, tags ...string) Command {
	return Command{Op: OpShardRule, Rule: &RuleCmd{Name: name, First: first, Last: last, Require: tags}}
}

func unrule(name string) Command {
	return Command{Op: OpShardRule, Rule: &RuleCmd{Name: name, Clear: true}}
}

func taggedSession(id, node string, tags ...string) Command {
	return Command{Op: OpSessionCreate, Session: &SessionCmd{ID: id, Node: node, NodeID: "i" + node, TTLNanos: 1e9, Tags: tags}}
}

// ruleHistory is goldenHistory plus a tagged session, three rules (one
// replaced) and a cleared one.
func ruleHistory(t *testing.T) *applier {
	a := goldenHistory(t)
	a.do(taggedSession("se", "ne", "ssd", "zone=eu"))
	a.do(rule("hot", 0, 9, "ssd"))
	a.do(rule("eu", 20, 29, "zone=eu"))
	a.do(rule("gone", 1, 1, "x"))
	a.do(rule("hot", 0, 4, "ssd"))
	a.do(unrule("gone"))
	return a
}

// TestShardRules: a rule is set (Count 1), repeated (Count 0), replaced,
// kept in name order, and cleared; a rule outside the table, without or
// with bad tags, or of a bad name is an error that changes nothing; a
// session keeps its tags.
func TestShardRules(t *testing.T) {
	a := goldenHistory(t)
	if r := a.do(rule("b", 0, 9, "ssd")); r.Err != nil || r.Count != 1 {
		t.Fatalf("rule: %+v", r)
	}
	if r := a.do(rule("b", 0, 9, "ssd")); r.Err != nil || r.Count != 0 {
		t.Fatalf("the same rule again: %+v", r)
	}
	a.do(rule("a", 3, 3, "gpu", "zone=us"))
	if r := a.do(rule("b", 5, 9, "ssd")); r.Count != 1 {
		t.Fatalf("replace: %+v", r)
	}
	got := a.f.View().Rules()
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" || got[1].First != 5 || !slices.Equal(got[0].Require, []string{"gpu", "zone=us"}) {
		t.Fatalf("rules %+v", got)
	}
	for _, c := range []Command{rule("c", 0, 40, "x"), rule("c", 5, 4, "x"), rule("c", 0, 1), rule("c", 0, 1, "a b"),
		rule("c", 0, 1, "a,b"), rule("", 0, 1, "x"), rule("c", 0, 1, "")} {
		if r := a.do(c); r.Err == nil || len(a.f.View().Rules()) != 2 {
			t.Fatalf("%+v: %+v; want an error and no new rule", c.Rule, r)
		}
	}
	if r := a.do(unrule("a")); r.Count != 1 || len(a.f.View().Rules()) != 1 {
		t.Fatalf("clear: %+v", r)
	}
	if r := a.do(unrule("zz")); r.Err != nil || r.Count != 0 {
		t.Fatalf("clearing an absent rule: %+v", r)
	}
	a.do(taggedSession("se", "ne", "ssd"))
	if s, ok := a.f.View().Session("se"); !ok || !slices.Equal(s.Tags, []string{"ssd"}) {
		t.Fatalf("session se: %+v", s)
	}
	if r := a.do(taggedSession("sf", "nf", "bad tag")); r.Err == nil {
		t.Fatal("a session with a bad tag was created")
	}
}

// TestGoldenRuleCommands pins the encoding of OpShardRule and of a tagged
// session create (testdata/rule-commands.golden, under
// RuleCommandVersion); the same bodies under another version are refused,
// and a create without tags is written as before.
func TestGoldenRuleCommands(t *testing.T) {
	cmds := []Command{rule("hot", 0, 9, "ssd"), unrule("hot"), taggedSession("se", "ne", "ssd", "zone=eu")}
	lines := checkGoldenCommands(t, filepath.Join("testdata", "rule-commands.golden"), cmds,
		func(got, want Command) bool {
			return reflect.DeepEqual(got.Rule, want.Rule) && reflect.DeepEqual(got.Session, want.Session)
		})
	for _, l := range lines {
		if l[:2] != "06" {
			t.Fatalf("%s written under version %s", l, l[:2])
		}
	}
	for _, c := range cmds {
		b := mustEncode(t, c)
		for _, v := range []byte{CommandVersion, ValueCommandVersion, PinCommandVersion} {
			if _, err := Decode(append([]byte{v}, b[1:]...)); err == nil {
				t.Errorf("%s under version %d decodes", c.Op, v)
			}
		}
	}
	plain := mustEncode(t, Command{Op: OpSessionCreate, Session: &SessionCmd{ID: "s", TTLNanos: 1}})
	if plain[0] != CommandVersion {
		t.Errorf("a create without tags is written under version %d", plain[0])
	}
	if _, err := Decode(append([]byte{RuleCommandVersion}, plain[1:]...)); !errors.Is(err, ErrMalformed) {
		t.Errorf("a create without tags under the rule version: %v", err)
	}
}

// TestGoldenRuleSnapshot pins a snapshot with rules and a tagged session
// (testdata/snapshot-rule.golden, under SnapshotRuleVersion): it restores
// to the same bytes, rules and tags; the same bytes marked an earlier
// version are refused; a state without them keeps the earlier versions.
func TestGoldenRuleSnapshot(t *testing.T) {
	path := filepath.Join("testdata", "snapshot-rule.golden")
	if *updateGolden {
		b, err := ruleHistory(t).f.EncodeSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if golden[0] != SnapshotRuleVersion {
		t.Fatalf("golden snapshot of version %d", golden[0])
	}
	if b, _ := ruleHistory(t).f.EncodeSnapshot(); !bytes.Equal(b, golden) {
		t.Fatal("the rule history now encodes differently from " + path)
	}
	f := New()
	if err := f.Restore(io.NopCloser(bytes.NewReader(golden))); err != nil {
		t.Fatal(err)
	}
	if again, _ := f.EncodeSnapshot(); !bytes.Equal(again, golden) {
		t.Fatal("the restored rule snapshot encodes differently")
	}
	rules := f.View().Rules()
	if len(rules) != 2 || rules[0].Name != "eu" || rules[1].Name != "hot" || rules[1].Last != 4 {
		t.Fatalf("restored rules %+v", rules)
	}
	if s, _ := f.View().Session("se"); !slices.Equal(s.Tags, []string{"ssd", "zone=eu"}) {
		t.Fatalf("restored session se: %+v", s)
	}
	for _, v := range []byte{SnapshotVersion, SnapshotValueVersion, SnapshotPinVersion} {
		old := append([]byte{v}, golden[1:]...)
		if err := New().Restore(io.NopCloser(bytes.NewReader(old))); !errors.Is(err, ErrMalformed) {
			t.Errorf("rules under snapshot version %d: %v, want refused", v, err)
		}
	}
	plain, _ := pinHistory(t).f.EncodeSnapshot()
	if plain[0] != SnapshotPinVersion {
		t.Errorf("a snapshot without rules is written under version %d", plain[0])
	}
	if err := New().Restore(io.NopCloser(bytes.NewReader(append([]byte{SnapshotRuleVersion}, plain[1:]...)))); !errors.Is(err, ErrMalformed) {
		t.Errorf("a version %d snapshot without rules or tags: %v, want refused", SnapshotRuleVersion, err)
	}
}
