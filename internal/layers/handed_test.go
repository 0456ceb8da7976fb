package layers

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoPartHandedTheCoordinator fails when the facade hands its
// *Coordinator to a package below it: as an argument of a call into an
// internal package or a field of a literal of one of its types. Imports
// already keep the parts from naming the coordinator; this keeps them from
// getting it as an any or through a one-method interface it satisfies. A
// part gets the few things it uses (closures over the coordinator, its
// metrics, its proposer) instead. The facade's code does not import
// hashicorp/raft either: it holds the raft node (internal/raftnode), not
// raft.
func TestNoPartHandedTheCoordinator(t *testing.T) {
	dir := filepath.Join("..", "..", "coordinator")
	p, err := build.Default.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range p.Imports {
		if imp == "github.com/hashicorp/raft" {
			t.Errorf("coordinator imports %s: it holds the raft node (internal/raftnode) only", imp)
		}
	}
	fset := token.NewFileSet()
	calls := 0
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parts := map[string]bool{} // import names of internal packages
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(path, module+"internal/") {
				continue
			}
			n := filepath.Base(path)
			if imp.Name != nil {
				n = imp.Name.Name
			}
			parts[n] = true
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			coords := coordinatorNames(fn)
			if len(coords) == 0 {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if _, ok := n.(*ast.FuncLit); ok {
					return false // a closure is the facade's own code
				}
				var args []ast.Expr
				switch n := n.(type) {
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && isPart(sel.X, parts) {
						calls++
						args = n.Args
					}
				case *ast.CompositeLit:
					if sel, ok := typeSelector(n.Type); ok && isPart(sel.X, parts) {
						for _, e := range n.Elts {
							if kv, ok := e.(*ast.KeyValueExpr); ok {
								e = kv.Value
							}
							args = append(args, e)
						}
					}
				}
				for _, a := range args {
					if id, ok := a.(*ast.Ident); ok && coords[id.Name] {
						t.Errorf("%s: %s hands the *Coordinator (%s) to an internal package", fset.Position(a.Pos()), fn.Name.Name, id.Name)
					}
				}
				return true
			})
		}
	}
	if calls == 0 {
		t.Fatal("found no call into an internal package: the check read nothing")
	}
}

// coordinatorNames returns the names fn's receiver and parameters of type
// *Coordinator have.
func coordinatorNames(fn *ast.FuncDecl) map[string]bool {
	out := map[string]bool{}
	var fields []*ast.Field
	if fn.Recv != nil {
		fields = append(fields, fn.Recv.List...)
	}
	fields = append(fields, fn.Type.Params.List...)
	for _, f := range fields {
		if star, ok := f.Type.(*ast.StarExpr); ok {
			if id, ok := star.X.(*ast.Ident); ok && id.Name == "Coordinator" {
				for _, n := range f.Names {
					out[n.Name] = true
				}
			}
		}
	}
	return out
}

// typeSelector returns the pkg.Type of a composite literal's type (also
// behind a generic instantiation).
func typeSelector(e ast.Expr) (*ast.SelectorExpr, bool) {
	switch t := e.(type) {
	case *ast.SelectorExpr:
		return t, true
	case *ast.IndexExpr:
		return typeSelector(t.X)
	case *ast.IndexListExpr:
		return typeSelector(t.X)
	}
	return nil, false
}

func isPart(x ast.Expr, parts map[string]bool) bool {
	id, ok := x.(*ast.Ident)
	return ok && parts[id.Name]
}
