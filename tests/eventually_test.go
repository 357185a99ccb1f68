package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Eventually and Never run their condition on another goroutine, where a
// failing require (FailNow) or t.Fatal cannot stop the test: the check
// hangs until the deadline and its error is lost. A condition returns a
// bool from plain checks, or EventuallyWithT collects assert.X(c, ...) on
// its *assert.CollectT. This test finds, in every test file of the module,
// a condition that calls require or assert on anything but its own
// CollectT, calls Fatal/FailNow/Skip, or hands a test (t, b.t) to a helper
// that could fail it. It reads syntax only: a method that fails a test it
// holds itself (b.status) is not seen.
func TestNoFailingChecksInEventually(t *testing.T) {
	t.Parallel()
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && d.Name() != ".." || d.Name() == "vendor" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isWaitCall(call) {
				return true
			}
			for _, arg := range call.Args {
				if fn, ok := arg.(*ast.FuncLit); ok {
					for _, pos := range failingChecks(fn) {
						found = append(found, fset.Position(pos).String())
					}
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, found, "Eventually/Never conditions that can fail the test from another goroutine")
}

// isWaitCall reports a call of X.Eventually, X.EventuallyWithT or X.Never.
func isWaitCall(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && (sel.Sel.Name == "Eventually" || sel.Sel.Name == "EventuallyWithT" || sel.Sel.Name == "Never")
}

// failingChecks returns the positions in a condition's body that can fail
// the test rather than the tick.
func failingChecks(fn *ast.FuncLit) []token.Pos {
	collect := "" // the condition's *assert.CollectT, if it has one
	if ps := fn.Type.Params.List; len(ps) == 1 && len(ps[0].Names) == 1 {
		collect = ps[0].Names[0].Name
	}
	isTest := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.Ident:
			return e.Name == "t" || e.Name == "tb"
		case *ast.SelectorExpr:
			return e.Sel.Name == "t"
		}
		return false
	}
	var out []token.Pos
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "require" || pkg.Name == "assert") {
				if len(call.Args) == 0 || collect == "" || !isIdent(call.Args[0], collect) {
					out = append(out, call.Pos())
				}
				return true
			}
			switch sel.Sel.Name {
			case "Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow":
				out = append(out, call.Pos())
				return true
			}
		}
		for _, a := range call.Args {
			if isTest(a) {
				out = append(out, call.Pos())
			}
		}
		return true
	})
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
