package settings

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/testkit"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md's table")

const doc = "../docs/configuration.md"

// docs/configuration.md's table is the one Table makes from the readers, so it
// cannot list a variable nobody reads, miss one, or show a stale default.
func TestConfigurationTableIsMadeFromTheReaders(t *testing.T) {
	table, err := Table()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "-update -->\n", "<!-- end of the generated table -->"
	s := string(raw)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s: the generated table's markers are missing", doc)
	}
	if got := s[i+len(begin) : j]; got != table {
		if !*update {
			t.Fatalf("%s's table is not what the code reads: run go test ./settings -run TestConfigurationTable -update", doc)
		}
		if err := os.WriteFile(doc, []byte(s[:i+len(begin)]+table+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// docker-compose.yml gives each process every setting it requires, valid.
func TestComposeEnvironmentIsComplete(t *testing.T) {
	for _, p := range Processes() {
		env, err := testkit.ComposeEnv("../docker-compose.yml", p.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Load(config.New(func(k string) string { return env[k] })); err != nil {
			t.Errorf("%s's configuration from docker-compose.yml: %v", p.Name, err)
		}
	}
}

// Every variable a process reads refuses a value of the wrong kind, naming it,
// and the process does not start.
func TestEveryBadValueIsAnErrorNamingItsVariable(t *testing.T) {
	bad := map[string]string{
		config.KindInt: "0", config.KindCount: "-1", config.KindDuration: "soon", config.KindBool: "yes",
		config.KindLevel: "verbose", config.KindRequired: "",
	}
	// Text whose reader checks it.
	checked := map[string]string{
		"FAIRNESS_WEIGHTS": "acme=0", "KAFKA_SASL_MECHANISM": "GSSAPI", "PAYLOAD_KEYS": "k1:c2hvcnQ=",
		"EVENTS_RETENTION": "1h", "IDEMPOTENCY_TTL": "1h", "RECONCILE_INTERVAL": "10ms",
		"PROBLEM_BASE_URL": "orderflow.dev/problems",
	}
	tried := 0
	for _, p := range Processes() {
		env, err := testkit.ComposeEnv("../docker-compose.yml", p.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range Read(func(k string) string { return env[k] })[p.Name] {
			value, ok := checked[v.Name]
			if !ok {
				value, ok = bad[v.Kind]
			}
			if !ok {
				continue
			}
			tried++
			err := p.Load(config.New(func(k string) string {
				if k == v.Name {
					return value
				}
				return env[k]
			}))
			if err == nil || !strings.Contains(err.Error(), v.Name) {
				t.Errorf("%s: %s=%q: %v, want an error naming %s", p.Name, v.Name, value, err, v.Name)
			}
		}
	}
	if tried < 60 {
		t.Fatalf("only %d bad values tried", tried)
	}
}
