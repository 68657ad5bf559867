package fairness

import "testing"

func TestParse(t *testing.T) {
	w, err := Parse(" acme=2, tiny=0.25 ,")
	if err != nil {
		t.Fatal(err)
	}
	if p := w.Priority("acme"); p.FairnessKey != "acme" || p.FairnessWeight != 2 {
		t.Fatalf("acme: %+v", p)
	}
	if p := w.Priority("other"); p.FairnessKey != "other" || p.FairnessWeight != 0 {
		t.Fatalf("a tenant not named: %+v, want the default weight", p)
	}
	for _, bad := range []string{"acme", "acme=0", "acme=-1", "acme=x", "acme=1e9", "Acme=1", "acme=1,acme=2", "acme=NaN"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
	var zero Weights
	if p := zero.Priority("acme"); p.FairnessKey != "acme" {
		t.Fatalf("zero Weights: %+v", p)
	}
}
