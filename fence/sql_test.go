package fence_test

import (
	"testing"

	"github.com/holdfast-go/holdfast/fence"
)

func TestNewSQLValidates(t *testing.T) {
	good := fence.SQLConfig{Table: "jobs", KeyColumn: "id", FenceColumn: "fence", Placeholder: fence.Question}
	bad := map[string]func(c *fence.SQLConfig){
		"injection in table":  func(c *fence.SQLConfig) { c.Table = "users; DROP TABLE x" },
		"injection in key":    func(c *fence.SQLConfig) { c.KeyColumn = "id = id OR 1=1 --" },
		"quoted identifier":   func(c *fence.SQLConfig) { c.FenceColumn = `"fence"` },
		"space":               func(c *fence.SQLConfig) { c.FenceColumn = "my fence" },
		"leading digit":       func(c *fence.SQLConfig) { c.Table = "1jobs" },
		"two dots":            func(c *fence.SQLConfig) { c.Table = "a.b.c" },
		"empty schema":        func(c *fence.SQLConfig) { c.Table = ".jobs" },
		"empty key":           func(c *fence.SQLConfig) { c.KeyColumn = "" },
		"too long":            func(c *fence.SQLConfig) { c.Table = string(make([]byte, 64)) },
		"non-ASCII":           func(c *fence.SQLConfig) { c.Table = "tâche" },
		"key is fence":        func(c *fence.SQLConfig) { c.KeyColumn = "fence" },
		"no placeholder":      func(c *fence.SQLConfig) { c.Placeholder = 0 },
		"unknown placeholder": func(c *fence.SQLConfig) { c.Placeholder = 3 },
	}
	for name, mutate := range bad {
		c := good
		mutate(&c)
		if _, err := fence.NewSQL(c); err == nil {
			t.Errorf("%s: %+v accepted", name, c)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	for _, table := range []string{"jobs", "public.jobs", "_x1", "Jobs_2"} {
		c := good
		c.Table = table
		c.Placeholder = fence.Dollar
		if _, err := fence.NewSQL(c); err != nil {
			t.Errorf("table %q rejected: %v", table, err)
		}
	}
}

func TestPlaceholderString(t *testing.T) {
	if fence.Question.String() != "?" || fence.Dollar.String() != "$N" || fence.Placeholder(9).String() != "Placeholder(9)" {
		t.Fatal(fence.Question, fence.Dollar, fence.Placeholder(9))
	}
}
