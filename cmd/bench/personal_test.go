package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Scenario 14's figures are this build's CPU per order, every process, against
// the build before's, met at 1.10x as printed; its notes hold the ratio of the
// api and worker processes alone.
func TestPersonalFigures(t *testing.T) {
	rs := []Result{
		{Scenario: newBefore, CPUPerOp: map[string]float64{"temporal": 40, "api": 2, "worker": 6, "postgres": 2}},
		{Scenario: newThis, CPUPerOp: map[string]float64{"temporal": 40, "api": 3, "worker": 7, "postgres": 4}},
		{Scenario: returningBefore, CPUPerOp: map[string]float64{"temporal": 40, "api": 2, "worker": 6, "postgres": 2}},
		{Scenario: returningThis, CPUPerOp: map[string]float64{"temporal": 44, "api": 3, "worker": 8, "postgres": 1}},
	}
	var got []Figure
	for _, f := range figures(rs) {
		if strings.HasPrefix(f.Name, "CPU per order with per-customer keys") {
			got = append(got, f)
		}
	}
	want := []struct {
		who          string
		value, ratio float64
		met          bool
	}{{"new customers", 54, 1.08, true}, {"returning customers", 56, 1.12, false}}
	if len(got) != len(want) {
		t.Fatalf("%d figures, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if !strings.Contains(got[i].Name, w.who) || got[i].Value != w.value || got[i].Baseline != 50 ||
			math.Abs(got[i].Ratio-w.ratio) > 0.005 || got[i].Met != w.met || got[i].Target != "≤ 1.10×" {
			t.Errorf("figure %d: %+v, want %s %.2f ratio %.2f met %v", i, got[i], w.who, w.value, w.ratio, w.met)
		}
	}

	compareBuilds(rs, map[string]float64{newBefore: 10, newThis: 12.5, returningBefore: 10, returningThis: 0})
	for i, note := range []string{"", "; its api and worker: 12.5 ms of CPU per order until its workflows closed, 1.25x of 14a's 10.0", "", ""} {
		if rs[i].Note != note {
			t.Errorf("%s: note %q, want %q", rs[i].Scenario, rs[i].Note, note)
		}
	}
	if f := figures(rs[1:]); len(f) != 1 {
		t.Errorf("without 14a, %d figures, want 1 (returning customers): %+v", len(f), f)
	}
}

// Without both binaries of the build before keys, scenario 14 says why and is
// skipped: no results, no error.
func TestPersonalSkipsWithoutBase(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "api"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{"", dir} {
		var out bytes.Buffer
		b := &bench{base: base, out: &out}
		rs, err := b.personal(context.Background())
		if err != nil || rs != nil || !strings.HasPrefix(out.String(), "scenario 14 skipped: ") {
			t.Errorf("base %q: %v, %v, printed %q", base, rs, err, out.String())
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "worker"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if why := (&bench{base: dir}).baseMissing(); why != "" {
		t.Errorf("both binaries there, missing: %s", why)
	}
}
