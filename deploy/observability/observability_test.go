package observability_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// dashboard is the part of Grafana's dashboard JSON the checks read.
type dashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// queries returns every PromQL expression of the dashboard and the alert rules, by
// where it is; Grafana's $__rate_interval becomes a plain range.
func queries(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	rules, errs := rulefmt.ParseFile("alerts.yml", false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("alerts.yml: %v", errs)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert] = r.Expr
		}
	}
	b, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	for _, p := range d.Panels {
		for i, target := range p.Targets {
			out["panel "+p.Title+" #"+string(rune('A'+i))] = strings.ReplaceAll(target.Expr, "$__rate_interval", "5m")
		}
	}
	return out
}

// metricNames parses expr and returns the metric names it selects.
func metricNames(t *testing.T, where, expr string) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				t.Errorf("%s: a selector without a metric name", where)
			}
			names = append(names, vs.Name)
		}
		return nil
	})
	if len(names) == 0 {
		t.Errorf("%s: selects no metric", where)
	}
	return names
}

// Every alert has a severity, a summary and a runbook that is a section of
// docs/operations.md;
// every query of the dashboard and the rules is valid PromQL.
func TestRulesAndDashboardAreValid(t *testing.T) {
	readme, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var anchors []string
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(string(readme), -1) {
		anchors = append(anchors, strings.ToLower(strings.ReplaceAll(strings.TrimSpace(m[1]), " ", "-")))
	}
	rules, _ := rulefmt.ParseFile("alerts.yml", false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if r.Labels["severity"] != "page" && r.Labels["severity"] != "ticket" {
				t.Errorf("%s: severity %q, want page or ticket", r.Alert, r.Labels["severity"])
			}
			anchor, ok := strings.CutPrefix(r.Annotations["runbook"], "docs/operations.md#")
			if r.Annotations["summary"] == "" || !ok || !slices.Contains(anchors, anchor) {
				t.Errorf("%s: summary %q, runbook %q: want both, the runbook a heading of docs/operations.md", r.Alert, r.Annotations["summary"], r.Annotations["runbook"])
			}
		}
	}
	if n < 8 {
		t.Errorf("%d alert rules, want the 8 docs/operations.md describes", n)
	}
	for where, q := range queries(t) {
		metricNames(t, where, q)
	}
}
