package ingress_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/orderflow/orderflow/"

// The ingress core imports no kind and no kind's store: a kind can live in its
// team's own module, reaching the core only through ingress.Kind. Build tags
// are ignored: every non-test file counts.
func TestTheCoreImportsNoKind(t *testing.T) {
	// The core's packages, from this folder: what every kind gets by saying
	// only what differs (guarantee 19).
	coreDirs := []string{".", "intake", "httpapi", "consumer", "idempotency", "wire", "../platform/identity"}
	// The kinds and their stores, and the workflows and activities, which hold
	// the kinds' types.
	kindPackages := []string{"internal/order", "internal/orderstore", "internal/refund", "internal/refundstore",
		"ingress/orders", "ingress/refunds", "workflows", "activities"}
	for _, dir := range coreDirs {
		imports := importsOf(t, dir)
		if len(imports) == 0 {
			t.Errorf("%s: no imports read; has the package moved?", dir)
		}
		for file, paths := range imports {
			for _, p := range paths {
				if rel, ok := strings.CutPrefix(p, module); ok && slices.Contains(kindPackages, rel) {
					t.Errorf("%s imports %s, a kind's package", file, p)
				}
			}
		}
	}
}

// importsOf parses the imports of the package's non-test files, by file.
func importsOf(t *testing.T, dir string) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			out[path] = append(out[path], p)
		}
	}
	return out
}
