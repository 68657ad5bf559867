package kubernetes_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/orderflow/orderflow/platform/telemetry"
)

// objects is one kustomization's output, strictly decoded into the API types.
type objects struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	pdbs        []*policyv1.PodDisruptionBudget
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	jobs        []*batchv1.Job
	policies    []*networkingv1.NetworkPolicy
	scaled      []*scaledObject
	auths       map[string]*triggerAuthentication
	rules       []*prometheusRule
	monitors    []*serviceMonitor
}

// hashSuffix is what kustomize appends to a generated ConfigMap's name: a dash
// and ten characters of its hash's alphabet.
var hashSuffix = regexp.MustCompile(`-[2456789bcdfghkmt]{10}$`)

// unhashed is a generated object's name without its hash suffix.
func unhashed(name string) string { return hashSuffix.ReplaceAllString(name, "") }

// triggerAuthentication is what the checks read of KEDA's TriggerAuthentication.
type triggerAuthentication struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		SecretTargetRef []struct {
			Parameter string `json:"parameter"`
			Name      string `json:"name"`
			Key       string `json:"key"`
		} `json:"secretTargetRef"`
	} `json:"spec"`
}

// scaledObject is what the checks read of KEDA's ScaledObject (keda.sh/v1alpha1),
// every field it may carry here named, so an unknown one fails the decode.
type scaledObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicaCount *int32 `json:"minReplicaCount"`
		MaxReplicaCount *int32 `json:"maxReplicaCount"`
		PollingInterval int    `json:"pollingInterval"`
		CooldownPeriod  int    `json:"cooldownPeriod"`
		Triggers        []struct {
			Type              string            `json:"type"`
			Metadata          map[string]string `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
			} `json:"authenticationRef"`
		} `json:"triggers"`
	} `json:"spec"`
}

// build runs kustomize on dir and decodes every object, refusing unknown fields.
func build(t *testing.T, dir string) objects {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone // the combinations' kustomizations name base by its path
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	o := objects{deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{},
		auths: map[string]*triggerAuthentication{}}
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		where := fmt.Sprintf("%s: %s %s", dir, r.GetKind(), r.GetName())
		switch r.GetKind() {
		case "Deployment":
			d := &appsv1.Deployment{}
			strict(t, where, y, d)
			o.deployments[d.Name] = d
		case "Service":
			s := &corev1.Service{}
			strict(t, where, y, s)
			o.services[s.Name] = s
		case "ConfigMap":
			c := &corev1.ConfigMap{}
			strict(t, where, y, c)
			o.configMaps[unhashed(c.Name)] = c
		case "PodDisruptionBudget":
			p := &policyv1.PodDisruptionBudget{}
			strict(t, where, y, p)
			o.pdbs = append(o.pdbs, p)
		case "HorizontalPodAutoscaler":
			h := &autoscalingv2.HorizontalPodAutoscaler{}
			strict(t, where, y, h)
			o.hpas = append(o.hpas, h)
		case "Job":
			j := &batchv1.Job{}
			strict(t, where, y, j)
			o.jobs = append(o.jobs, j)
		case "ScaledObject":
			so := &scaledObject{}
			strict(t, where, y, so)
			o.scaled = append(o.scaled, so)
		case "TriggerAuthentication":
			a := &triggerAuthentication{}
			strict(t, where, y, a)
			o.auths[a.Metadata.Name] = a
		case "NetworkPolicy":
			n := &networkingv1.NetworkPolicy{}
			strict(t, where, y, n)
			o.policies = append(o.policies, n)
		case "PrometheusRule":
			pr := &prometheusRule{}
			strict(t, where, y, pr)
			o.rules = append(o.rules, pr)
		case "ServiceMonitor":
			sm := &serviceMonitor{}
			strict(t, where, y, sm)
			o.monitors = append(o.monitors, sm)
		default:
			t.Errorf("%s: a kind the checks do not know", where)
		}
	}
	return o
}

func strict(t *testing.T, where string, y []byte, v any) {
	t.Helper()
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("%s: %v", where, err)
	}
}

func TestManifests(t *testing.T) {
	for _, dir := range []string{"base", "overlays/production"} {
		t.Run(dir, func(t *testing.T) { checkManifests(t, build(t, dir)) })
	}
}

func checkManifests(t *testing.T, o objects) {
	settings := o.configMaps["orderflow"]
	if settings == nil {
		t.Fatal("no ConfigMap orderflow")
	}
	shutdown := duration(t, settings.Data["SHUTDOWN_TIMEOUT"])
	drain := duration(t, settings.Data["DRAIN_DELAY"])
	for _, name := range []string{"orderflow-api", "orderflow-worker"} {
		d := o.deployments[name]
		if d == nil {
			t.Fatalf("no Deployment %s", name)
		}
		checkPod(t, name, d.Spec.Template.Spec, shutdown, drain, name == "orderflow-api")
		checkCovered(t, o, d)
		checkIngress(t, o, d)
	}
	for _, j := range o.jobs {
		// A Job's template is immutable and its name fixed: the next release's
		// apply fails while it exists, and its pods run on the old schema.
		t.Errorf("Job %s: a fixed-name Job cannot be applied again; migrate in an init container", j.Name)
	}
	for name, inits := range map[string][]string{"orderflow-api": {"migrate"}, "orderflow-worker": {"migrate", "bootstrap", "shadow"}} {
		var got []string
		for _, c := range o.deployments[name].Spec.Template.Spec.InitContainers {
			got = append(got, c.Args[0])
		}
		if !slices.Equal(got, inits) {
			t.Errorf("%s: init containers run %v, want %v", name, got, inits)
		}
	}
	worker := o.scaledObjectOf("orderflow-worker")
	if worker == nil || len(worker.Spec.Triggers) != 1 || worker.Spec.Triggers[0].Type != "temporal" {
		t.Fatal("orderflow-worker: want a ScaledObject with a temporal trigger (the task queue's backlog)")
	}
	md := worker.Spec.Triggers[0].Metadata
	if md["namespace"] != settings.Data["TEMPORAL_NAMESPACE"] || md["taskQueue"] != settings.Data["TASK_QUEUE"] || md["endpointFromEnv"] != "TEMPORAL_ADDRESS" {
		t.Errorf("orderflow-worker: the scaler watches %s/%s, the workers serve %s/%s", md["namespace"], md["taskQueue"],
			settings.Data["TEMPORAL_NAMESPACE"], settings.Data["TASK_QUEUE"])
	}
}

func (o objects) scaledObjectOf(deployment string) *scaledObject {
	for _, so := range o.scaled {
		if so.Spec.ScaleTargetRef.Kind == "Deployment" && so.Spec.ScaleTargetRef.Name == deployment {
			return so
		}
	}
	return nil
}

func duration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

// checkPod: probes on the ops port, a grace period above the drain budget, the
// API's preStop pause equal to DRAIN_DELAY, secrets from the Secret, resources set.
func checkPod(t *testing.T, name string, pod corev1.PodSpec, shutdown, drain time.Duration, api bool) {
	t.Helper()
	c := pod.Containers[0]
	var preStop time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	if api && preStop != drain {
		t.Errorf("%s: preStop pause %s, want DRAIN_DELAY %s", name, preStop, drain)
	}
	var grace time.Duration
	if pod.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	}
	if grace <= shutdown+preStop {
		t.Errorf("%s: terminationGracePeriodSeconds %s must exceed SHUTDOWN_TIMEOUT %s plus the preStop pause %s", name, grace, shutdown, preStop)
	}
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz", c.StartupProbe: "/healthz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "ops" {
			t.Errorf("%s: want a %s probe on the ops port (liveness, readiness and startup)", name, path)
			continue
		}
		if timeout := time.Duration(max(probe.TimeoutSeconds, 1)) * time.Second; timeout <= telemetry.ReadyBudget {
			t.Errorf("%s: a %s probe times out after %s, before the handler's %s", name, path, timeout, telemetry.ReadyBudget)
		}
	}
	if r := c.ReadinessProbe; r != nil && r.FailureThreshold < 2 {
		t.Errorf("%s: readiness failureThreshold %d: one slow answer takes the pod out of rotation", name, r.FailureThreshold)
	}
	for _, key := range []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"} {
		if !slices.ContainsFunc(pod.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool { return c.TopologyKey == key }) {
			t.Errorf("%s: not spread over %s", name, key)
		}
	}
	secret := map[string]bool{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			secret[e.Name] = true
		} else if strings.Contains(e.Name, "KEY") || strings.Contains(e.Name, "SECRET") || e.Name == "DATABASE_URL" {
			t.Errorf("%s: %s must come from a Secret", name, e.Name)
		}
	}
	for _, k := range []string{"DATABASE_URL", "PAYLOAD_KEYS"} {
		if !secret[k] {
			t.Errorf("%s: %s not from the Secret", name, k)
		}
	}
	if !secret["PAYMENTS_API_KEY"] {
		t.Errorf("%s: PAYMENTS_API_KEY not from the Secret", name)
	}
	if api && !secret["PAYMENTS_WEBHOOK_SECRETS"] {
		t.Errorf("%s: PAYMENTS_WEBHOOK_SECRETS not from the Secret", name)
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: want CPU and memory requests and a memory limit", name)
	}
	checkSecurity(t, name, pod)
}

func checkSecurity(t *testing.T, name string, pod corev1.PodSpec) {
	t.Helper()
	ps := pod.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 {
		t.Errorf("%s: the pod must run as a non-root user", name)
	}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("%s/%s: want a read-only root filesystem, no privilege escalation, all capabilities dropped", name, c.Name)
		}
	}
}

// checkCovered: a PDB selects the Deployment's pods and an HPA scales it.
func checkCovered(t *testing.T, o objects, d *appsv1.Deployment) {
	t.Helper()
	pdb := false
	for _, p := range o.pdbs {
		match := p.Spec.Selector != nil
		for k, v := range p.Spec.Selector.MatchLabels {
			match = match && d.Spec.Template.Labels[k] == v
		}
		pdb = pdb || match
	}
	if !pdb {
		t.Errorf("%s: no PodDisruptionBudget selects its pods", d.Name)
	}
	scalers := 0
	for _, h := range o.hpas {
		if h.Spec.ScaleTargetRef.Kind == "Deployment" && h.Spec.ScaleTargetRef.Name == d.Name {
			scalers++
		}
	}
	if o.scaledObjectOf(d.Name) != nil {
		scalers++ // KEDA makes its own HPA
	}
	switch {
	case scalers != 1:
		t.Errorf("%s: %d autoscalers, want one (an HPA or a ScaledObject)", d.Name, scalers)
	case d.Spec.Replicas != nil:
		t.Errorf("%s: replicas %d beside its autoscaler: every apply resets the count", d.Name, *d.Spec.Replicas)
	}
}

// checkIngress: a NetworkPolicy selects the Deployment's pods, and of its ports
// only the public one (the API's http) is open to everyone; every other port has
// named callers, and the codec is not open to the metrics' callers.
func checkIngress(t *testing.T, o objects, d *appsv1.Deployment) {
	t.Helper()
	callers := map[string][]string{} // port name -> the callers' selectors
	selected := false
	for _, p := range o.policies {
		match := true
		for k, v := range p.Spec.PodSelector.MatchLabels {
			match = match && d.Spec.Template.Labels[k] == v
		}
		if !match || len(p.Spec.PolicyTypes) == 0 {
			continue
		}
		selected = true
		for _, rule := range p.Spec.Ingress {
			from := "everyone"
			if len(rule.From) > 0 {
				from = ""
				for _, peer := range rule.From {
					if peer.PodSelector == nil || len(peer.PodSelector.MatchLabels) == 0 {
						from = "everyone"
						break
					}
					from += fmt.Sprint(peer.PodSelector.MatchLabels)
				}
			}
			for _, port := range rule.Ports {
				callers[port.Port.String()] = append(callers[port.Port.String()], from)
			}
		}
	}
	if !selected {
		t.Errorf("%s: no NetworkPolicy selects its pods", d.Name)
		return
	}
	for _, port := range d.Spec.Template.Spec.Containers[0].Ports {
		got := callers[port.Name]
		switch {
		case len(got) == 0:
			t.Errorf("%s: port %s has no caller allowed", d.Name, port.Name)
		case port.Name != "http" && slices.Contains(got, "everyone"):
			t.Errorf("%s: port %s is open to everyone", d.Name, port.Name)
		case port.Name == "codec" && slices.Equal(got, callers["ops"]):
			t.Errorf("%s: the codec answers the metrics' callers", d.Name)
		}
	}
}

// docker-compose.yml drains like the manifests: the same SHUTDOWN_TIMEOUT and
// DRAIN_DELAY, and a stop grace period above them.
func TestComposeDrainsLikeTheManifests(t *testing.T) {
	settings := build(t, "base").configMaps["orderflow"].Data
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Env      map[string]string `json:"x-app-env"`
		Services map[string]struct {
			StopGracePeriod string `json:"stop_grace_period"`
		} `json:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"SHUTDOWN_TIMEOUT", "DRAIN_DELAY"} {
		if compose.Env[k] != settings[k] {
			t.Errorf("docker-compose %s = %q, the manifests %q", k, compose.Env[k], settings[k])
		}
	}
	budget := duration(t, settings["SHUTDOWN_TIMEOUT"]) + duration(t, settings["DRAIN_DELAY"])
	for _, name := range []string{"api", "worker"} {
		if g := compose.Services[name].StopGracePeriod; g == "" || duration(t, g) <= budget {
			t.Errorf("docker-compose %s: stop_grace_period %q, want above %s", name, g, budget)
		}
	}
}

// The production overlay runs pinned releases (never latest, never untagged); the
// base's images are placeholders no registry serves, so nothing deploys it
// unpinned.
func TestImagesArePinned(t *testing.T) {
	release := regexp.MustCompile(`^ghcr\.io/orderflow/orderflow-(api|worker):v\d+\.\d+\.\d+$`)
	for dir, ok := range map[string]func(string) bool{
		"overlays/production": release.MatchString,
		"base":                func(image string) bool { return image == "orderflow-api" || image == "orderflow-worker" },
	} {
		for name, d := range build(t, dir).deployments {
			for _, c := range slices.Concat(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers) {
				if !ok(c.Image) {
					t.Errorf("%s: %s/%s runs image %q", dir, name, c.Name, c.Image)
				}
			}
		}
	}
}
