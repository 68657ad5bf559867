package kubernetes_test

import (
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	promparser "github.com/prometheus/prometheus/promql/parser"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// monitoringAPI is the Prometheus Operator's API group and version.
const monitoringAPI = "monitoring.coreos.com/v1"

// prometheusRule is the Prometheus Operator's PrometheusRule, every field it may
// carry here named (its CRD's), so an unknown one fails the decode.
type prometheusRule struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Groups []ruleGroup `json:"groups"`
	} `json:"spec"`
}

type ruleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Limit    *int   `json:"limit,omitempty"`
	Rules    []struct {
		Alert         string            `json:"alert,omitempty"`
		Record        string            `json:"record,omitempty"`
		Expr          string            `json:"expr"`
		For           string            `json:"for,omitempty"`
		KeepFiringFor string            `json:"keep_firing_for,omitempty"`
		Labels        map[string]string `json:"labels,omitempty"`
		Annotations   map[string]string `json:"annotations,omitempty"`
	} `json:"rules"`
}

// serviceMonitor is what the checks read of the Prometheus Operator's
// ServiceMonitor, every field it may carry here named.
type serviceMonitor struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		JobLabel          string               `json:"jobLabel"`
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector *struct {
			Any        bool     `json:"any"`
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Scheme   string `json:"scheme"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// dashboardConfigMap is the Grafana sidecar's ConfigMap.
const dashboardConfigMap = "orderflow-grafana-dashboard"

// With the prometheus-operator component (alone on base, and in the production
// overlay), the rendered manifests carry the alert rules as a PrometheusRule, a
// ServiceMonitor scraping each process's metrics port, and the dashboard as the
// sidecar's ConfigMap; without it (base) the pods are scraped by annotation.
func TestMonitoring(t *testing.T) {
	for name, dir := range map[string]string{
		"overlays/production":      "overlays/production",
		"base+prometheus-operator": combination(t, []string{"prometheus-operator"}),
	} {
		t.Run(name, func(t *testing.T) {
			for _, p := range monitoringProblems(t, build(t, dir)) {
				t.Error(p)
			}
		})
	}
	t.Run("base", func(t *testing.T) {
		o := build(t, "base")
		if len(o.rules) > 0 || len(o.monitors) > 0 || o.configMaps[dashboardConfigMap] != nil {
			t.Error("the base needs no Prometheus Operator: its CRDs belong in the component")
		}
		for _, p := range annotationProblems(o) {
			t.Error(p)
		}
	})
}

// A monitoring mistake is caught: the checks can fail.
func TestAMonitoringMistakeFailsTheCheck(t *testing.T) {
	for what, breakIt := range map[string]func(o *objects){
		"a ServiceMonitor on a port no Service has": func(o *objects) { o.monitors[0].Spec.Endpoints[0].Port = "metrics" },
		"a ServiceMonitor selecting no Service": func(o *objects) {
			o.monitors[1].Spec.Selector.MatchLabels = map[string]string{"app.kubernetes.io/name": "orderflow"}
		},
		"the worker scraped twice": func(o *objects) {
			o.monitors[1].Spec.Endpoints = append(o.monitors[1].Spec.Endpoints, o.monitors[1].Spec.Endpoints[0])
		},
		"the ops port off OPS_ADDR": func(o *objects) {
			o.deployments["orderflow-api"].Spec.Template.Spec.Containers[0].Ports[1].ContainerPort = 9092
		},
		"the pods still annotated for scraping": func(o *objects) {
			o.deployments["orderflow-worker"].Spec.Template.Annotations["prometheus.io/scrape"] = "true"
		},
		"a PrometheusRule of another API version": func(o *objects) { o.rules[0].APIVersion = "monitoring.coreos.com/v1alpha1" },
		"an alert that drifted from alerts.yml":   func(o *objects) { o.rules[0].Spec.Groups[0].Rules[0].For = "1m" },
		"a dropped alert": func(o *objects) {
			o.rules[0].Spec.Groups[1].Rules = o.rules[0].Spec.Groups[1].Rules[1:]
		},
		"a dashboard the sidecar ignores": func(o *objects) { delete(o.configMaps[dashboardConfigMap].Labels, "grafana_dashboard") },
		"a dashboard that is not the file": func(o *objects) {
			o.configMaps[dashboardConfigMap].Data["orderflow.json"] = strings.Replace(o.configMaps[dashboardConfigMap].Data["orderflow.json"], "orderflow", "orderflows", 1)
		},
		"prometheus kept off the ops port": func(o *objects) {
			for _, p := range o.policies {
				p.Spec.Ingress = slices.DeleteFunc(p.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool { return r.Ports[0].Port.String() == "ops" })
			}
		},
	} {
		o := build(t, "overlays/production")
		if p := monitoringProblems(t, o); len(p) > 0 {
			t.Fatalf("intact: %v", p)
		}
		breakIt(&o)
		if p := monitoringProblems(t, o); len(p) == 0 {
			t.Errorf("%s: no problem found", what)
		} else {
			t.Logf("%s: %s", what, p[0])
		}
	}
}

// monitoringProblems lists what keeps the Prometheus Operator and Grafana's
// sidecar from monitoring the rendered manifests.
func monitoringProblems(t *testing.T, o objects) []string {
	t.Helper()
	var out []string
	// The alert rules: one PrometheusRule, alerts.yml's rules.
	if len(o.rules) != 1 {
		out = append(out, fmt.Sprintf("%d PrometheusRules, want one", len(o.rules)))
	}
	for _, pr := range o.rules {
		if pr.APIVersion != monitoringAPI || pr.Kind != "PrometheusRule" {
			out = append(out, fmt.Sprintf("PrometheusRule %s: %s %s, want %s", pr.Metadata.Name, pr.APIVersion, pr.Kind, monitoringAPI))
		}
		if p := rulesDiffer(t, pr); p != "" {
			out = append(out, "PrometheusRule "+pr.Metadata.Name+": "+p)
		}
	}
	// The scrapes: every process's metrics port by exactly one endpoint.
	scraped := map[string]int{}
	for _, sm := range o.monitors {
		if sm.APIVersion != monitoringAPI || sm.Kind != "ServiceMonitor" {
			out = append(out, fmt.Sprintf("ServiceMonitor %s: %s %s, want %s", sm.Metadata.Name, sm.APIVersion, sm.Kind, monitoringAPI))
		}
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil {
			out = append(out, fmt.Sprintf("ServiceMonitor %s: %v", sm.Metadata.Name, err))
			continue
		}
		for _, ep := range sm.Spec.Endpoints {
			where := fmt.Sprintf("ServiceMonitor %s port %s", sm.Metadata.Name, ep.Port)
			if ep.Path != "" && ep.Path != "/metrics" {
				out = append(out, fmt.Sprintf("%s: path %s, the processes serve /metrics", where, ep.Path))
			}
			targets := 0
			for _, svc := range o.services {
				if !sel.Matches(labels.Set(svc.Labels)) || !sameNamespace(sm, svc) {
					continue
				}
				for _, sp := range svc.Spec.Ports {
					if sp.Name != ep.Port {
						continue
					}
					for _, d := range o.deployments {
						if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
							continue
						}
						targets++
						scraped[d.Name]++
						if p := metricsPortProblem(d, sp); p != "" {
							out = append(out, where+": "+p)
						}
					}
				}
			}
			if targets == 0 {
				out = append(out, where+": scrapes no pod (no Service it selects has the port)")
			}
		}
	}
	for name := range o.deployments {
		if scraped[name] != 1 {
			out = append(out, fmt.Sprintf("%s: scraped by %d ServiceMonitor endpoints, want one", name, scraped[name]))
		}
		if a := o.deployments[name].Spec.Template.Annotations["prometheus.io/scrape"]; a == "true" {
			out = append(out, name+": annotated prometheus.io/scrape=true beside its ServiceMonitor: a Prometheus reading both counts every series twice")
		}
		if !prometheusMayReach(o, o.deployments[name], "ops") {
			out = append(out, name+": no NetworkPolicy lets Prometheus's pods (app.kubernetes.io/name=prometheus) reach the ops port")
		}
	}
	// The dashboard: grafana-dashboard.json as it is, labelled for the sidecar, under
	// a name that stays.
	cm := o.configMaps[dashboardConfigMap]
	want, err := os.ReadFile("../observability/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case cm == nil:
		out = append(out, "no ConfigMap "+dashboardConfigMap)
	case cm.Labels["grafana_dashboard"] != "1":
		out = append(out, dashboardConfigMap+": not labelled grafana_dashboard=\"1\", which Grafana's sidecar looks for")
	case cm.Name != dashboardConfigMap:
		out = append(out, dashboardConfigMap+": named "+cm.Name+": a hash suffix renames it each change, and the sidecar drops the dashboard when the old one is pruned")
	case len(cm.Data) != 1 || cm.Data["orderflow.json"] != string(want):
		out = append(out, dashboardConfigMap+": want one key, orderflow.json, holding deploy/observability/grafana-dashboard.json as it is")
	}
	return out
}

// rulesDiffer compares a PrometheusRule's rules with alerts.yml's, both read by
// Prometheus's rule parser.
func rulesDiffer(t *testing.T, pr *prometheusRule) string {
	t.Helper()
	p := promparser.NewParser(promparser.Options{})
	want, errs := rulefmt.ParseFile("../observability/alerts.yml", false, model.UTF8Validation, p, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("alerts.yml: %v", errs)
	}
	spec, err := yaml.Marshal(pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	got, errs := rulefmt.Parse(spec, false, model.UTF8Validation, p, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return fmt.Sprintf("its rules do not parse: %v", errs)
	}
	if !reflect.DeepEqual(got.Groups, want.Groups) {
		return "its rules are not alerts.yml's (go test ./deploy/observability -run TestPrometheusRuleIsAlertsYml -update)"
	}
	return ""
}

func sameNamespace(sm *serviceMonitor, svc *corev1.Service) bool {
	if ns := sm.Spec.NamespaceSelector; ns != nil && (ns.Any || len(ns.MatchNames) > 0) {
		return ns.Any || slices.Contains(ns.MatchNames, svc.Namespace)
	}
	return sm.Metadata.Namespace == svc.Namespace
}

// metricsPortProblem: the Service port leads to the container port the process
// serves /metrics on (its OPS_ADDR).
func metricsPortProblem(d *appsv1.Deployment, sp corev1.ServicePort) string {
	c := d.Spec.Template.Spec.Containers[0]
	var port *corev1.ContainerPort
	for i, cp := range c.Ports {
		if (sp.TargetPort.Type == intstr.String && cp.Name == sp.TargetPort.StrVal) || (sp.TargetPort.Type == intstr.Int && cp.ContainerPort == sp.TargetPort.IntVal) {
			port = &c.Ports[i]
		}
	}
	if port == nil {
		return fmt.Sprintf("%s: the Service's targetPort %s is no port of %s", d.Name, sp.TargetPort.String(), c.Name)
	}
	if ops := opsPort(c); ops != port.ContainerPort {
		return fmt.Sprintf("%s: scrapes port %d, the process serves /metrics on OPS_ADDR's %d", d.Name, port.ContainerPort, ops)
	}
	return ""
}

// opsPort is the port of the container's OPS_ADDR, where it serves /metrics.
func opsPort(c corev1.Container) int32 {
	for _, e := range c.Env {
		if e.Name == "OPS_ADDR" {
			n, _ := strconv.Atoi(e.Value[strings.LastIndex(e.Value, ":")+1:])
			return int32(n)
		}
	}
	return 0
}

// prometheusMayReach: a NetworkPolicy selecting the pods admits, on port, pods
// labelled app.kubernetes.io/name=prometheus (the operator's Prometheus pods).
func prometheusMayReach(o objects, d *appsv1.Deployment, port string) bool {
	prometheus := labels.Set{"app.kubernetes.io/name": "prometheus"}
	for _, p := range o.policies {
		if !labels.SelectorFromSet(p.Spec.PodSelector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)) {
			continue
		}
		for _, r := range p.Spec.Ingress {
			portOK := len(r.Ports) == 0 || slices.ContainsFunc(r.Ports, func(pp networkingv1.NetworkPolicyPort) bool {
				return pp.Port != nil && pp.Port.String() == port
			})
			fromOK := len(r.From) == 0 || slices.ContainsFunc(r.From, func(peer networkingv1.NetworkPolicyPeer) bool {
				return peer.PodSelector != nil && labels.SelectorFromSet(peer.PodSelector.MatchLabels).Matches(prometheus)
			})
			if portOK && fromOK {
				return true
			}
		}
	}
	return false
}

// annotationProblems: without the component, each pod is annotated for scraping
// on the port its process serves /metrics on.
func annotationProblems(o objects) []string {
	var out []string
	for name, d := range o.deployments {
		a := d.Spec.Template.Annotations
		if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != strconv.Itoa(int(opsPort(d.Spec.Template.Spec.Containers[0]))) {
			out = append(out, fmt.Sprintf("%s: annotated scrape=%q port=%q, want true and OPS_ADDR's port %d", name,
				a["prometheus.io/scrape"], a["prometheus.io/port"], opsPort(d.Spec.Template.Spec.Containers[0])))
		}
	}
	return out
}
