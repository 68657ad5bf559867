package cli

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// -o takes table (the default) or json, nothing else; JSON of no rows is [], not
// null, so a script can always iterate it.
func TestOutput(t *testing.T) {
	var f Format
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	OutputFlag(fs, &f)
	if f != Table {
		t.Fatalf("default %q, want table", f)
	}
	if err := fs.Parse([]string{"-o", "json"}); err != nil || f != JSON {
		t.Fatalf("-o json: %q, %v", f, err)
	}
	if err := fs.Parse([]string{"-o", "yaml"}); err == nil || !strings.Contains(err.Error(), `want "table" or "json"`) {
		t.Fatalf("-o yaml: %v, want refused", err)
	}
	var out bytes.Buffer
	if err := WriteJSON[struct{}](&out, nil); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Fatalf("no rows: %q, %v", out.String(), err)
	}
}
