package client

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// heavy are modules of the service that a program using the client must never
// be made to download or build.
var heavy = []string{"k8s.io/", "sigs.k8s.io/kustomize", "github.com/chromedp/", "github.com/prometheus/",
	"go.temporal.io/", "github.com/segmentio/kafka-go", "github.com/jackc/", "github.com/orderflow/orderflow "}

// allowed are the only modules the client's module graph may hold: itself and
// what it needs for UUIDs.
var allowed = []string{"github.com/orderflow/orderflow/client", "github.com/google/uuid"}

// The client is a module of its own that needs only the standard library and
// github.com/google/uuid: its module graph, and that of a program outside the
// repository that imports it (through a replace to this directory), hold no
// module of the service (Kubernetes, kustomize, chromedp, Prometheus, Temporal,
// Kafka, PostgreSQL), and the program builds from the client alone.
//
// Run it alone: cd client && go test -run TestModuleGraphHoldsNoServiceModule -v .
func TestModuleGraphHoldsNoServiceModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	run := func(in string, args ...string) string {
		t.Helper()
		cmd := exec.Command(gobin, args...)
		cmd.Dir = in
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), in, err, out)
		}
		return string(out)
	}
	check := func(who, graph string) {
		t.Helper()
		for _, line := range strings.Split(strings.TrimSpace(graph), "\n") {
			mod := strings.Fields(line)[0]
			for _, h := range heavy {
				if strings.HasPrefix(mod+" ", h) {
					t.Errorf("%s: the module graph holds %s", who, line)
				}
			}
			if !slices.Contains(allowed, mod) && mod != "example.com/usesclient" {
				t.Errorf("%s: the module graph holds %s, which the client does not need", who, line)
			}
		}
	}

	graph := run(dir, "list", "-m", "all")
	t.Logf("go list -m all in client/:\n%s", graph)
	check("client/", graph)

	// A program outside the repository that imports the client, as a user's would.
	prog := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod": "module example.com/usesclient\n\ngo 1.26\n\n" +
			"require github.com/orderflow/orderflow/client v0.0.0-00010101000000-000000000000\n\n" +
			"require github.com/google/uuid v1.6.0 // indirect\n\n" +
			"replace github.com/orderflow/orderflow/client => " + dir + "\n",
		"go.sum": string(sum),
		"main.go": "package main\n\nimport \"github.com/orderflow/orderflow/client\"\n\n" +
			"func main() {\n\t_, _ = client.New(client.Options{BaseURL: \"http://127.0.0.1:1\", APIKey: \"k\"})\n}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(prog, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	graph = run(prog, "list", "-m", "all")
	t.Logf("go list -m all in a program that imports the client:\n%s", graph)
	check("a program that imports the client", graph)
	if !strings.Contains(graph, "github.com/orderflow/orderflow/client v0.0.0-00010101000000-000000000000 => "+dir) {
		t.Errorf("the program does not use this directory's client:\n%s", graph)
	}
	var outside []string
	for _, p := range strings.Fields(run(prog, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")) {
		if p != "example.com/usesclient" && p != "github.com/orderflow/orderflow/client" && p != "github.com/google/uuid" {
			outside = append(outside, p)
		}
	}
	if len(outside) > 0 {
		t.Errorf("the client imports packages beyond the standard library and uuid: %v", outside)
	}
	run(prog, "build", "-o", os.DevNull, ".")
}
