package observability_test

import (
	"bytes"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "write prometheus-rule.yaml from alerts.yml")

// ruleHeader opens the generated PrometheusRule.
const ruleHeader = `# Generated from alerts.yml, the one source of orderflow's alert rules: edit
# alerts.yml, then
#   go test ./deploy/observability -run TestPrometheusRuleIsAlertsYml -update
# The Prometheus Operator's form of the same rules; kustomization.yaml applies it
# (deploy/kubernetes/components/prometheus-operator).
`

// prometheusRule is alerts.yml as a PrometheusRule (monitoring.coreos.com/v1):
// its groups, as they are, under spec.
func prometheusRule(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules map[string]any
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	if len(rules) != 1 || rules["groups"] == nil {
		t.Fatalf("alerts.yml: want only groups, have %v", keys(rules))
	}
	out, err := yaml.Marshal(map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata":   map[string]any{"name": "orderflow"},
		"spec":       map[string]any{"groups": rules["groups"]},
	})
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(ruleHeader), out...)
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// prometheus-rule.yaml is what alerts.yml generates: a change to one without
// the other fails here (-update writes it). And its rules, read by Prometheus's
// own parser, are alerts.yml's, field for field.
func TestPrometheusRuleIsAlertsYml(t *testing.T) {
	want := prometheusRule(t)
	if *update {
		if err := os.WriteFile("prometheus-rule.yaml", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("prometheus-rule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("prometheus-rule.yaml is not what alerts.yml generates (%s); run\n"+
			"  go test ./deploy/observability -run TestPrometheusRuleIsAlertsYml -update", firstDifference(got, want))
	}
	fromFile, errs := rulefmt.ParseFile("alerts.yml", false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("alerts.yml: %v", errs)
	}
	fromCRD := ruleGroupsOf(t, got)
	if len(fromCRD.Groups) != len(fromFile.Groups) || !reflect.DeepEqual(fromCRD.Groups, fromFile.Groups) {
		t.Errorf("prometheus-rule.yaml's rules differ from alerts.yml's:\n%+v\n%+v", fromCRD.Groups, fromFile.Groups)
	}
}

// ruleGroupsOf parses a PrometheusRule's spec with Prometheus's rule parser,
// refusing fields Prometheus does not know.
func ruleGroupsOf(t *testing.T, pr []byte) *rulefmt.RuleGroups {
	t.Helper()
	var obj struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Spec       map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(pr, &obj); err != nil {
		t.Fatal(err)
	}
	if obj.APIVersion != "monitoring.coreos.com/v1" || obj.Kind != "PrometheusRule" {
		t.Fatalf("%s %s, want monitoring.coreos.com/v1 PrometheusRule", obj.APIVersion, obj.Kind)
	}
	spec, err := yaml.Marshal(obj.Spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("the PrometheusRule's spec: %v", errs)
	}
	return groups
}

// firstDifference names the first line where got and want differ.
func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: %q, want %q", i+1, gl, wl)
		}
	}
	return "the same lines"
}
