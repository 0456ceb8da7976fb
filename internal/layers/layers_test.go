package layers

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/holdfast-go/holdfast/"

// rank places a package (its path inside the module) in the import order
// of the package doc; top is the rank of everything that may import all.
func rank(pkg string) int {
	const top = 7
	switch pkg {
	case "internal/codec", "internal/atomicfile", "internal/logbridge", "internal/netns", "internal/leaktest", "internal/pause",
		"internal/walog", "internal/lincheck", "internal/disktest", "internal/storetest", "internal/storehealth", "internal/errline", "internal/testkit":
		return 0
	case "fsm", "membership", "transport", "transport/memnet", "shardown", "fence", "certs":
		return 1
	case "internal/wire":
		return 2
	case "internal/leases", "internal/shards":
		return 4
	case "coordinator":
		return 5
	case "admin", "holdfasttest":
		return 6
	case "internal/layers": // a test above the facade
		return top
	}
	if strings.HasPrefix(pkg, "internal/") {
		return 3
	}
	return top
}

// pkg is a package's imports of other packages of the module: by its
// code, and by its tests only.
type pkg struct{ code, tests []string }

// packages returns every package of the module (not nested modules, not
// testdata), by its path inside the module.
func packages(t *testing.T) map[string]*pkg {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*pkg{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
			return filepath.SkipDir // another module (bench)
		}
		p, err := build.Default.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		out[rel] = &pkg{code: local(rel, p.Imports), tests: local(rel, append(p.TestImports, p.XTestImports...))}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// local keeps the imports of module packages other than self.
func local(self string, imports []string) []string {
	var out []string
	for _, imp := range imports {
		if dep, ok := strings.CutPrefix(imp, module); ok && dep != self {
			out = append(out, dep)
		}
	}
	return out
}

// allowed reports whether code of package p may import dep: only a lower
// rank, except that the building blocks (ranks 0 and 1) may import each
// other.
func allowed(p, dep string) bool {
	return rank(dep) < rank(p) || (rank(p) <= 1 && rank(dep) <= 1)
}

// TestImportsFlowOneWay fails when a package imports one of its own rank
// or above: an internal part importing the coordinator, two parts reaching
// into each other, a building block importing a part.
func TestImportsFlowOneWay(t *testing.T) {
	pkgs := packages(t)
	for _, must := range []string{"coordinator", "internal/wire", "internal/session", "fsm"} {
		if _, ok := pkgs[must]; !ok {
			t.Fatalf("package %s not found: the walk missed the module (found %d packages)", must, len(pkgs))
		}
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		for _, dep := range pkgs[p].code {
			if !allowed(p, dep) {
				t.Errorf("%s (rank %d) imports %s (rank %d): imports must go to a lower rank (see the package doc)",
					p, rank(p), dep, rank(dep))
			}
		}
		for _, dep := range pkgs[p].tests {
			if rank(p) < 5 && rank(dep) >= 5 {
				t.Errorf("tests of %s import %s: a part's tests use fakes, not the facade", p, dep)
			}
		}
	}
	t.Logf("%d packages checked", len(names))
}

// TestRankRule: the rule itself catches the imports it exists for.
func TestRankRule(t *testing.T) {
	for _, bad := range [][2]string{
		{"internal/shards", "coordinator"},
		{"internal/cluster", "internal/raftnode"},
		{"internal/wire", "internal/session"},
		{"fsm", "internal/wire"},
		{"internal/newpart", "coordinator"},
	} {
		if allowed(bad[0], bad[1]) {
			t.Errorf("%s importing %s would pass", bad[0], bad[1])
		}
	}
	for _, good := range [][2]string{
		{"coordinator", "internal/shards"},
		{"internal/leases", "internal/session"},
		{"internal/session", "internal/wire"},
		{"internal/wire", "fsm"},
		{"admin", "coordinator"},
		{"transport/memnet", "transport"},
	} {
		if !allowed(good[0], good[1]) {
			t.Errorf("%s importing %s would fail", good[0], good[1])
		}
	}
}
