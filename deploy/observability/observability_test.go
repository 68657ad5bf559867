package observability_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

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

// runbookBase is where every alert's runbook_url points: a file of this
// repository on GitHub, and a heading of it.
const runbookBase = "https://github.com/orderflow/orderflow/blob/main/"

// Every alert has a severity, a summary and a runbook_url that is an absolute
// link to a heading of a file of this repository's docs (as GitHub anchors it);
// every query of the dashboard and the rules is valid PromQL.
func TestRulesAndDashboardAreValid(t *testing.T) {
	rules, errs := rulefmt.ParseFile("alerts.yml", false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("alerts.yml: %v", errs)
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if r.Labels["severity"] != "page" && r.Labels["severity"] != "ticket" {
				t.Errorf("%s: severity %q, want page or ticket", r.Alert, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" {
				t.Errorf("%s: no summary", r.Alert)
			}
			if p := runbookProblem(r.Annotations["runbook_url"]); p != "" {
				t.Errorf("%s: runbook_url %q: %s", r.Alert, r.Annotations["runbook_url"], p)
			}
			if _, ok := r.Annotations["runbook"]; ok {
				t.Errorf("%s: a runbook annotation beside runbook_url", r.Alert)
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

// runbookProblem says what is wrong with an alert's runbook_url, or "".
func runbookProblem(u string) string {
	rest, ok := strings.CutPrefix(u, runbookBase)
	if !ok {
		return "want an absolute link under " + runbookBase
	}
	file, anchor, ok := strings.Cut(rest, "#")
	if !ok || anchor == "" {
		return "want a #heading of the file"
	}
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(file)))
	if err != nil {
		return "no such file in the repository: " + file
	}
	if !slices.Contains(headingAnchors(string(b)), anchor) {
		return file + " has no heading #" + anchor
	}
	return ""
}

// headingAnchors are the anchors GitHub gives a Markdown file's headings: the
// heading's text lowercased, without punctuation, spaces as hyphens, a repeated
// one suffixed -1, -2; lines of fenced code are not headings.
func headingAnchors(md string) []string {
	var out []string
	seen := map[string]int{}
	fenced := false
	heading := regexp.MustCompile(`^#{1,6}[ \t]+(.+?)[ \t#]*$`)
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		m := heading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

// The anchors are GitHub's: every link of docs/operations.md to one of its own
// headings resolves by them, and an alert's runbook_url to a heading that is not
// there is refused.
func TestHeadingAnchorsAreGitHubs(t *testing.T) {
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := headingAnchors(string(b))
	links := regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(string(b), -1)
	if len(links) == 0 {
		t.Fatal("docs/operations.md links to none of its headings: nothing checks the anchors")
	}
	for _, l := range links {
		if !slices.Contains(anchors, l[1]) {
			t.Errorf("docs/operations.md links to #%s, which none of its headings is (%v)", l[1], anchors)
		}
	}
	for u, ok := range map[string]bool{
		runbookBase + "docs/operations.md#orderflowreconcilestalled":            true,
		runbookBase + "docs/operations.md#restoring-or-failing-over-postgresql": true,
		runbookBase + "docs/operations.md#orderflowreconcilestalledd":           false,
		runbookBase + "docs/nothing.md#orderflowreconcilestalled":               false,
		"docs/operations.md#orderflowreconcilestalled":                          false,
	} {
		if got := runbookProblem(u) == ""; got != ok {
			t.Errorf("%s: accepted %v, want %v", u, got, ok)
		}
	}
}

// The dashboard works as the Grafana sidecar provisions it, with no import step
// to fill in inputs: every panel reads the datasource variable, a Prometheus
// one; no __inputs. Panel ids are unique and no two panels overlap on the grid.
func TestDashboardIsProvisionable(t *testing.T) {
	b, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID        string          `json:"uid"`
		Inputs     json.RawMessage `json:"__inputs"`
		Templating struct {
			List []struct{ Name, Type, Query string } `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource *struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
			GridPos struct{ X, Y, W, H int } `json:"gridPos"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if d.UID == "" || d.Inputs != nil {
		t.Errorf("uid %q, __inputs %s: want a uid and no inputs", d.UID, d.Inputs)
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct{ Name, Type, Query string }) bool {
		return v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	}) {
		t.Error("no datasource variable of Prometheus data sources")
	}
	ids := map[int]string{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range d.Panels {
		if other, ok := ids[p.ID]; ok {
			t.Errorf("%q and %q share id %d", p.Title, other, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type != "row" && (p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}") {
			t.Errorf("%q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("%q: gridPos %+v outside the 24 columns", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[cell{x, y}]; ok {
					t.Errorf("%q overlaps %q at %d,%d", p.Title, other, x, y)
					break
				}
				taken[cell{x, y}] = p.Title
			}
		}
	}
}
