package kubernetes

import (
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// composeService is what the tests read of a docker-compose.yml service.
type composeService struct {
	Image       string         `json:"image"`
	Build       any            `json:"build"`
	Command     []string       `json:"command"`
	Environment map[string]any `json:"environment"`
	Ports       []string       `json:"ports"`
	Volumes     []string       `json:"volumes"`
	Restart     string         `json:"restart"`
	Healthcheck *struct {
		Test []string `json:"test"`
	} `json:"healthcheck"`
}

func readCompose(t *testing.T) map[string]composeService {
	t.Helper()
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]composeService `json:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	return compose.Services
}

// writable are the paths each image's user can write, by the image's Dockerfile:
// a named volume mounted anywhere else is created owned by root, and the process
// (temporal, uid 1000; Kafka's appuser) cannot write it.
var writable = map[string][]string{
	"temporalio/temporal": {"/home/temporal"},
	"apache/kafka":        {"/var/lib/kafka/data"},
	"postgres":            {"/var/lib/postgresql/data"},
}

// docker-compose.yml starts, by reading: every volume where its image's user can
// write and where the service keeps its data, health checks that test what they
// name, restart policies on orderflow's services, Temporal's port published.
func TestComposeCanStart(t *testing.T) {
	services := readCompose(t)
	for name, s := range services {
		image := strings.SplitN(s.Image, ":", 2)[0]
		for _, v := range s.Volumes {
			target := strings.SplitN(v, ":", 3)[1]
			if s.Image != "" && !slices.Contains(writable[image], target) {
				t.Errorf("%s: volume at %s, where %s's user cannot write (writable: %v)", name, target, image, writable[image])
			}
		}
	}
	temporal := services["temporal"]
	db := ""
	for _, arg := range temporal.Command {
		if v, ok := strings.CutPrefix(arg, "--db-filename="); ok {
			db = v
		}
	}
	if db == "" || !slices.ContainsFunc(temporal.Volumes, func(v string) bool { return strings.HasSuffix(v, ":"+path.Dir(db)) }) {
		t.Errorf("temporal: its database %q is not on its volume %v", db, temporal.Volumes)
	}
	if !slices.ContainsFunc(temporal.Ports, func(p string) bool { return strings.HasSuffix(p, ":7233") }) {
		t.Errorf("temporal: port 7233 not published (the README's temporal workflow show needs it): %v", temporal.Ports)
	}
	kafka := services["kafka"]
	if dirs := kafka.Environment["KAFKA_LOG_DIRS"]; dirs == nil || !slices.Contains(kafka.Volumes, "kafkadata:"+dirs.(string)) {
		t.Errorf("kafka: KAFKA_LOG_DIRS %v is not its volume %v", dirs, kafka.Volumes)
	}
	if hc := services["postgres"].Healthcheck; hc == nil || !strings.Contains(strings.Join(hc.Test, " "), "pg_isready -h 127.0.0.1") {
		t.Errorf("postgres: the healthcheck must ask over TCP (during init only the Unix socket answers)")
	}
	for name, ready := range map[string]string{"api": "http://127.0.0.1:9091/readyz", "worker": "http://127.0.0.1:9090/readyz", "paysim": "http://127.0.0.1:8099/healthz"} {
		s := services[name]
		if s.Restart == "" || s.Restart == "no" {
			t.Errorf("%s: no restart policy", name)
		}
		if want := []string{"CMD", "/" + name, "probe", ready}; s.Healthcheck == nil || !slices.Equal(s.Healthcheck.Test, want) {
			t.Errorf("%s: healthcheck %v, want %v", name, s.Healthcheck, want)
		}
	}
}

// The image's build context leaves out what a thief wants (the stack's payload
// keys, certificates and passwords) and the history; the images name their
// version, which the binaries print.
func TestImageBuildContextAndLabels(t *testing.T) {
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(ignore))
	for _, p := range []string{".git", ".stack"} {
		if !slices.Contains(lines, p) {
			t.Errorf(".dockerignore does not leave out %s", p)
		}
	}
	docker, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"version.linked=${VERSION}", `org.opencontainers.image.version="${VERSION}"`, `org.opencontainers.image.revision="${REVISION}"`} {
		if !strings.Contains(string(docker), want) {
			t.Errorf("Dockerfile: no %s", want)
		}
	}
}
