package kubernetes_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// uses are the services each process of each Deployment connects to.
var uses = map[string]map[string][]string{
	"orderflow-api":    {"migrate": {"postgres"}, "api": {"postgres", "temporal"}},
	"orderflow-worker": {"migrate": {"postgres"}, "bootstrap": {"temporal", "kafka"}, "shadow": {"temporal"}, "worker": {"postgres", "temporal", "kafka"}},
}

// component is a security component and what it gives a process of one service.
type component struct {
	name    string
	service string
	// needs are the settings a process must have: a value it must equal ("" for
	// any), from a Secret, or a file path that must be mounted from one.
	needs []need
	// scaler are the TriggerAuthentication parameters KEDA's scaler needs.
	scaler []string
}

type need struct {
	env, value     string
	secret, mounts bool
}

var components = []component{
	{"kafka-sasl-ssl", "kafka", []need{{env: "KAFKA_TLS", value: "true"}, {env: "KAFKA_SASL_MECHANISM", value: "SCRAM-SHA-512"},
		{env: "KAFKA_SASL_USERNAME", secret: true}, {env: "KAFKA_SASL_PASSWORD", secret: true}, {env: "KAFKA_TLS_CA_PATH", mounts: true}}, nil},
	{"temporal-mtls", "temporal", []need{{env: "TEMPORAL_TLS_CLIENT_CERT_PATH", mounts: true}, {env: "TEMPORAL_TLS_CLIENT_KEY_PATH", mounts: true},
		{env: "TEMPORAL_TLS_SERVER_CA_CERT_PATH", mounts: true}}, []string{"ca", "cert", "key"}},
	{"temporal-api-key", "temporal", []need{{env: "TEMPORAL_API_KEY", secret: true}}, []string{"apiKey"}},
	{"postgres-tls", "postgres", []need{{env: "PGSSLMODE", value: "verify-full"}, {env: "PGSSLROOTCERT", mounts: true}}, nil},
}

// Each secured combination renders, and every process gets what it needs to
// connect: the settings, the Secrets' values and the files mounted from them; and
// KEDA's scaler reads Temporal as the workers do.
func TestSecuredCombinations(t *testing.T) {
	for _, combo := range [][]string{
		{"kafka-sasl-ssl"}, {"temporal-mtls"}, {"temporal-api-key"}, {"postgres-tls"},
		{"kafka-sasl-ssl", "temporal-mtls", "postgres-tls"}, {"kafka-sasl-ssl", "temporal-api-key", "postgres-tls"},
	} {
		t.Run(strings.Join(combo, "+"), func(t *testing.T) {
			o := build(t, combination(t, combo))
			checkManifests(t, o)
			for _, p := range connectionProblems(o, combo) {
				t.Error(p)
			}
		})
	}
	// The production overlay is secured.
	o := build(t, "overlays/production")
	for _, p := range connectionProblems(o, []string{"kafka-sasl-ssl", "temporal-mtls", "postgres-tls"}) {
		t.Errorf("overlays/production: %s", p)
	}
}

// A process missing what it needs is caught: the checks can fail.
func TestAProcessMissingASecretFailsTheCheck(t *testing.T) {
	all := []string{"kafka-sasl-ssl", "temporal-mtls", "postgres-tls"}
	for what, breakIt := range map[string]func(o objects){
		"bootstrap without KAFKA_SASL_PASSWORD": func(o objects) {
			c := &o.deployments["orderflow-worker"].Spec.Template.Spec.InitContainers[1]
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "KAFKA_SASL_PASSWORD" })
		},
		"api without the Temporal certificates": func(o objects) {
			c := &o.deployments["orderflow-api"].Spec.Template.Spec.Containers[0]
			c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "temporal-tls" })
		},
		"worker's migrate without the PostgreSQL CA": func(o objects) {
			c := &o.deployments["orderflow-worker"].Spec.Template.Spec.InitContainers[0]
			c.VolumeMounts = nil
		},
		"the scaler without credentials": func(o objects) {
			o.scaled[0].Spec.Triggers[0].AuthenticationRef = nil
		},
	} {
		o := build(t, combination(t, all))
		if p := connectionProblems(o, all); len(p) > 0 {
			t.Fatalf("intact: %v", p)
		}
		breakIt(o)
		if p := connectionProblems(o, all); len(p) == 0 {
			t.Errorf("%s: no problem found", what)
		} else {
			t.Logf("%s: %s", what, p[0])
		}
	}
}

// combination writes a kustomization of base and the components.
func combination(t *testing.T, names []string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel := func(p string) string { // kustomize takes no absolute path
		r, err := filepath.Rel(dir, filepath.Join(wd, p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var comps []string
	for _, n := range names {
		comps = append(comps, "  - "+rel(filepath.Join("components", n)))
	}
	k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - %s\ncomponents:\n%s\n",
		rel("base"), strings.Join(comps, "\n"))
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// connectionProblems lists what a process lacks to connect with the components.
func connectionProblems(o objects, enabled []string) []string {
	var out []string
	for _, comp := range components {
		if !slices.Contains(enabled, comp.name) {
			continue
		}
		for deployment, procs := range uses {
			d := o.deployments[deployment]
			if d == nil {
				out = append(out, "no Deployment "+deployment)
				continue
			}
			pod := d.Spec.Template.Spec
			for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
				if !slices.Contains(procs[c.Name], comp.service) {
					continue
				}
				env := envOf(c, o)
				where := fmt.Sprintf("%s/%s (%s)", deployment, c.Name, comp.name)
				for _, n := range comp.needs {
					v, ok := env[n.env]
					switch {
					case !ok:
						out = append(out, fmt.Sprintf("%s: %s is not set", where, n.env))
					case n.secret && v.secret == nil:
						out = append(out, fmt.Sprintf("%s: %s is not from a Secret", where, n.env))
					case n.value != "" && v.value != n.value:
						out = append(out, fmt.Sprintf("%s: %s=%q, want %q", where, n.env, v.value, n.value))
					case n.mounts && !mounted(pod, c, v.value):
						out = append(out, fmt.Sprintf("%s: %s=%s is not a file mounted from a Secret", where, n.env, v.value))
					}
				}
			}
		}
		if comp.scaler != nil {
			out = append(out, scalerProblems(o, comp)...)
		}
	}
	return out
}

func scalerProblems(o objects, comp component) []string {
	so := o.scaledObjectOf("orderflow-worker")
	if so == nil || len(so.Spec.Triggers) == 0 || so.Spec.Triggers[0].AuthenticationRef == nil {
		return []string{fmt.Sprintf("KEDA's temporal trigger (%s): no authenticationRef", comp.name)}
	}
	a := o.auths[so.Spec.Triggers[0].AuthenticationRef.Name]
	if a == nil {
		return []string{fmt.Sprintf("KEDA's temporal trigger (%s): no TriggerAuthentication %s", comp.name, so.Spec.Triggers[0].AuthenticationRef.Name)}
	}
	var params []string
	for _, r := range a.Spec.SecretTargetRef {
		if r.Name != "" && r.Key != "" {
			params = append(params, r.Parameter)
		}
	}
	slices.Sort(params)
	if !slices.Equal(params, comp.scaler) {
		return []string{fmt.Sprintf("KEDA's TriggerAuthentication (%s) gives %v, want %v", comp.name, params, comp.scaler)}
	}
	return nil
}

type envValue struct {
	value  string
	secret *corev1.SecretKeySelector
}

// envOf is what a container's process sees: its ConfigMaps, then its env.
func envOf(c corev1.Container, o objects) map[string]envValue {
	out := map[string]envValue{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		if cm := o.configMaps[unhashed(from.ConfigMapRef.Name)]; cm != nil {
			for k, v := range cm.Data {
				out[k] = envValue{value: v}
			}
		}
	}
	for _, e := range c.Env {
		v := envValue{value: e.Value}
		if e.ValueFrom != nil {
			v.secret = e.ValueFrom.SecretKeyRef
		}
		out[e.Name] = v
	}
	return out
}

// mounted: path is a key of a Secret volume mounted in the container.
func mounted(pod corev1.PodSpec, c corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				return true
			}
			for _, it := range v.Secret.Items {
				if it.Path == rel {
					return true
				}
			}
		}
	}
	return false
}
