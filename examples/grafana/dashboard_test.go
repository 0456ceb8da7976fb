package grafana_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/holdfast-go/holdfast/holdfasttest/metricset"
)

// dashboard is the part of Grafana's dashboard model the tests check.
type dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type variable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Query any    `json:"query"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	Targets    []target    `json:"targets"`
	Panels     []panel     `json:"panels"` // a collapsed row's panels
}

type target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *datasource `json:"datasource"`
}

func readDashboard(t *testing.T) (dashboard, []byte) {
	t.Helper()
	raw, err := os.ReadFile("holdfast.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("holdfast.json: %v", err)
	}
	return d, raw
}

// allPanels returns the top-level panels and those inside collapsed rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// TestDashboardShape checks the dashboard's structure: a Prometheus data
// source variable that every query uses, unique panel IDs, a title on
// every panel, and at least one query on every panel but rows (which only
// group panels and have none).
func TestDashboardShape(t *testing.T) {
	d, _ := readDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q, uid %q: both must be set", d.Title, d.UID)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d: want 36 or later (data source references by uid)", d.SchemaVersion)
	}
	hasDS := false
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus" {
			hasDS = true
		}
	}
	if !hasDS {
		t.Error("no datasource variable of type datasource querying prometheus")
	}
	ids := map[int]string{}
	panels := allPanels(d.Panels)
	for _, p := range panels {
		if p.Title == "" {
			t.Errorf("panel %d (%s) has no title", p.ID, p.Type)
		}
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			if len(p.Targets) != 0 {
				t.Errorf("row %q has queries", p.Title)
			}
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no target", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not use the datasource variable: %+v", p.Title, p.Datasource)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: target %+v needs an expr and a unique refId", p.Title, tg)
			}
			refs[tg.RefID] = true
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: target %s does not use the datasource variable", p.Title, tg.RefID)
			}
		}
	}
	t.Logf("%d panels", len(panels))
}

// mustShow are metrics the dashboard must have a panel on: the refusals
// (transport and TLS, forwarded commands, fence) an operator looks for
// when something else is talking to the cluster or it is overloaded.
var mustShow = []string{
	"holdfast_transport_refused_total",
	"holdfast_forwards_refused_total",
	"holdfast_fence_rejections_total",
}

// TestDashboardMetricsExist checks that every holdfast_* name the
// dashboard mentions is a metric that a real coordinator (and a fence on
// the same registry) registers, and that it shows every metric in
// mustShow. Histograms are queried through their _bucket, _sum and _count
// series.
func TestDashboardMetricsExist(t *testing.T) {
	_, raw := readDashboard(t)
	families := metricset.Gather(t)

	used := map[string]bool{}
	for _, name := range metricset.Name.FindAllString(string(raw), -1) {
		family, ok := metricset.Resolve(families, name)
		if !ok {
			t.Errorf("the dashboard uses %s, which no coordinator registers", name)
			continue
		}
		used[family] = true
	}
	for _, name := range mustShow {
		if !used[name] {
			t.Errorf("the dashboard has no panel on %s", name)
		}
	}
	var unused []string
	for name := range families {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	slices.Sort(unused)
	t.Logf("%d of %d holdfast metrics on the dashboard; not shown: %v", len(used), len(families), unused)
}

// tableRow matches the first cell of a metric's row in docs/METRICS.md.
var tableRow = regexp.MustCompile("(?m)^\\| `(holdfast_[a-zA-Z0-9_]+)` \\|")

// TestMetricsDocListsEveryMetric keeps docs/METRICS.md exact, as the
// dashboard is kept: its tables have one row per metric a coordinator (and
// a fence) registers, no more, and every other holdfast_* name it mentions
// (in PromQL examples) is one of them.
func TestMetricsDocListsEveryMetric(t *testing.T) {
	raw, err := os.ReadFile("../../docs/METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	families := metricset.Gather(t)
	rows := map[string]bool{}
	for _, m := range tableRow.FindAllStringSubmatch(string(raw), -1) {
		if rows[m[1]] {
			t.Errorf("docs/METRICS.md lists %s twice", m[1])
		}
		rows[m[1]] = true
		if _, ok := families[m[1]]; !ok {
			t.Errorf("docs/METRICS.md lists %s, which no coordinator registers", m[1])
		}
	}
	for name := range families {
		if !rows[name] {
			t.Errorf("docs/METRICS.md has no row for %s", name)
		}
	}
	for _, name := range metricset.Name.FindAllString(string(raw), -1) {
		if _, ok := metricset.Resolve(families, name); !ok {
			t.Errorf("docs/METRICS.md mentions %s, which no coordinator registers", name)
		}
	}
}
