package contracts

import (
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestSchemasCompile(t *testing.T) {
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(v.Names()); n < 4 {
		t.Fatalf("%d schemas", n)
	}
	if err := v.Validate(Order, []byte(`{"customer_id":"c","currency":"EUR","items":[{"sku":"s","quantity":1,"unit_amount":1}],"payment_method":"pm"}`)); err != nil {
		t.Fatal(err)
	}
	if v.Validate(Order, []byte(`{"customer_id":"c","currency":"EUR","items":[],"payment_method":"pm"}`)) == nil {
		t.Fatal("an order with no items is valid")
	}
}

// TestAsyncAPINamesEverySchema: the AsyncAPI document refers to files that exist,
// and every schema file is reached from it.
func TestAsyncAPINamesEverySchema(t *testing.T) {
	raw, err := fs.ReadFile(files, "asyncapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var refs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "$ref" && !strings.HasPrefix(s, "#") {
					refs = append(refs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	reached := map[string]bool{}
	for _, r := range refs {
		if _, err := fs.Stat(files, r); err != nil {
			t.Errorf("asyncapi.yaml refers to %s: %v", r, err)
		}
		reached[r] = true
	}
	err = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".json" {
			return err
		}
		// Shared schemas are reached through the ones that refer to them.
		if !reached[p] && !slices.Contains([]string{Order, path.Join(EventsDir, "event.json")}, p) {
			t.Errorf("%s is in no message of asyncapi.yaml", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
