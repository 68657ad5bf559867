package observability_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	promparser "github.com/prometheus/prometheus/promql/parser"
)

// metricDef is a metric as the code defines it: its labels (nil when the code
// does not name them in a literal), and whether it is a histogram.
type metricDef struct {
	labels    []string
	known     bool
	histogram bool
}

type metricDefs map[string]metricDef

// targetLabels are the labels Prometheus adds to every series it scrapes (job
// and instance), and those the Prometheus Operator's ServiceMonitor adds.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "container", "endpoint"}

// definedMetrics reads every prometheus.New… call of the module's Go code (tests,
// deploy/ and third_party/ aside) and returns the metrics they define, by name.
func definedMetrics(t *testing.T) map[string]metricDef {
	t.Helper()
	root := filepath.Join("..", "..")
	defs := map[string]metricDef{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "third_party", "deploy", "testdata", "vendor", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(src), "prometheus.New") {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if name, def, ok := metricOfCall(n); ok {
				defs[name] = def
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) < 20 {
		t.Fatalf("read %d metric definitions from the code: the reader is broken", len(defs))
	}
	return defs
}

// metricOfCall recognizes prometheus.NewCounter(opts), New…Vec(opts, labels) and
// NewDesc(name, help, labels, constLabels).
func metricOfCall(n ast.Node) (string, metricDef, bool) {
	call, ok := n.(*ast.CallExpr)
	if !ok {
		return "", metricDef{}, false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", metricDef{}, false
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "prometheus" {
		return "", metricDef{}, false
	}
	fn := sel.Sel.Name
	def := metricDef{histogram: strings.HasPrefix(fn, "NewHistogram")}
	var name string
	switch fn {
	case "NewDesc":
		if len(call.Args) < 3 {
			return "", def, false
		}
		name = stringLit(call.Args[0])
		def.labels, def.known = stringsLit(call.Args[2])
	case "NewCounter", "NewGauge", "NewHistogram", "NewSummary",
		"NewCounterVec", "NewGaugeVec", "NewHistogramVec", "NewSummaryVec":
		opts, ok := call.Args[0].(*ast.CompositeLit)
		if !ok {
			return "", def, false
		}
		for _, e := range opts.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
					name = stringLit(kv.Value)
				}
			}
		}
		if strings.HasSuffix(fn, "Vec") {
			if len(call.Args) < 2 {
				return "", def, false
			}
			def.labels, def.known = stringsLit(call.Args[1])
		} else {
			def.labels, def.known = []string{}, true
		}
	default:
		return "", def, false
	}
	return name, def, name != ""
}

func stringLit(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}

// stringsLit reads []string{"a", "b"} (or nil); ok false when it is anything else.
func stringsLit(e ast.Expr) ([]string, bool) {
	if id, ok := e.(*ast.Ident); ok && id.Name == "nil" {
		return []string{}, true
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	out := []string{}
	for _, el := range lit.Elts {
		s := stringLit(el)
		if s == "" {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// lookup finds the metric a selector's name selects: the metric, or a
// histogram's _bucket (with le), _sum or _count.
func (defs metricDefs) lookup(name string) (metricDef, bool) {
	if d, ok := defs[name]; ok && !d.histogram {
		return d, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if d, ok := defs[base]; ok && d.histogram {
				if suffix == "_bucket" {
					d.labels = append(slices.Clone(d.labels), "le")
				}
				return d, true
			}
		}
	}
	return metricDef{}, false
}

// exprProblems lists the metrics expr names that the code does not define (nor
// the Temporal SDK, for temporal_ names), and the labels it matches or groups by
// that none of its metrics carries.
func exprProblems(t *testing.T, defs metricDefs, sdk map[string]bool, expr string) []string {
	t.Helper()
	e, err := promparser.NewParser(promparser.Options{}).ParseExpr(expr)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	// labelsOf are the labels a selector's series can have; nil: not known (the SDK's).
	labelsOf := func(vs *promparser.VectorSelector) []string {
		if d, ok := defs.lookup(vs.Name); ok && d.known {
			return append(slices.Clone(d.labels), targetLabels...)
		}
		return nil
	}
	promparser.Inspect(e, func(n promparser.Node, _ []promparser.Node) error {
		switch n := n.(type) {
		case *promparser.VectorSelector:
			_, defined := defs.lookup(n.Name)
			if !defined && !(strings.HasPrefix(n.Name, "temporal_") && sdk[n.Name]) {
				out = append(out, "names "+n.Name+", which the code does not define")
				return nil
			}
			if have := labelsOf(n); have != nil {
				for _, m := range n.LabelMatchers {
					if m.Name != "__name__" && !slices.Contains(have, m.Name) {
						out = append(out, n.Name+" has no label "+m.Name)
					}
				}
			}
		case *promparser.AggregateExpr:
			var have []string
			unknown := false
			promparser.Inspect(n.Expr, func(m promparser.Node, _ []promparser.Node) error {
				if vs, ok := m.(*promparser.VectorSelector); ok {
					l := labelsOf(vs)
					unknown = unknown || l == nil
					have = append(have, l...)
				}
				return nil
			})
			for _, g := range n.Grouping {
				if !unknown && !slices.Contains(have, g) {
					out = append(out, n.Op.String()+" by "+g+", a label none of its metrics has")
				}
			}
		}
		return nil
	})
	return out
}

// Every metric the dashboard's panels and the alert rules name is one the code
// defines (a prometheus.New… of the api's or the worker's packages), or for a
// temporal_ name one the Temporal SDK defines; and every label they match or
// group by is one of the metric's (or one Prometheus adds when it scrapes). No
// process runs: TestEveryNamedMetricIsExported checks the same against running
// ones.
func TestEveryNamedMetricIsDefinedInTheCode(t *testing.T) {
	defs := metricDefs(definedMetrics(t))
	sdk := sdkMetricNames(t)
	for where, q := range queries(t) {
		for _, p := range exprProblems(t, defs, sdk, q) {
			t.Errorf("%s: %s", where, p)
		}
	}
}

// The check can fail: a made-up metric, a label a metric does not have, a
// grouping by one, and a histogram's bucket of a metric that is no histogram.
func TestAnUndefinedMetricOrLabelFailsTheCheck(t *testing.T) {
	defs := metricDefs(definedMetrics(t))
	sdk := sdkMetricNames(t)
	for _, q := range []string{
		`sum(rate(orderflow_quota_refused_total[5m]))`,
		`sum by (table) (rate(orderflow_retention_pruned_rows_total[5m]))`,
		`histogram_quantile(0.95, sum by (le, operation) (rate(orderflow_provider_request_duration_seconds_bucket[5m])))`,
		`sum by (namespace, workflow_type) (rate(temporal_workflow_completed_total[5m]))`,
		`max by (instance, pod) (orderflow_ready)`,
	} {
		if p := exprProblems(t, defs, sdk, q); len(p) > 0 {
			t.Errorf("%s: %v, want none", q, p)
		}
	}
	for _, q := range []string{
		`sum(rate(orderflow_refund_outcomes_total[5m]))`,
		`sum by (customer) (rate(orderflow_quota_refused_total[5m]))`,
		`sum(rate(orderflow_quota_refused_total{customer="acme"}[5m]))`,
		`sum(rate(orderflow_reconcile_discrepancies_total_bucket[5m]))`,
		`sum(rate(temporal_made_up_total[5m]))`,
	} {
		if p := exprProblems(t, defs, sdk, q); len(p) == 0 {
			t.Errorf("%s: no problem found", q)
		} else {
			t.Logf("%s: %s", q, p[0])
		}
	}
}
