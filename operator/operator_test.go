package operator

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/platform/cli"
)

// workerApp is the worker binary's command line as far as the operator's
// commands go: what a main package gets from WorkerCommands.
func workerApp(getenv func(string) string, stdout, stderr io.Writer) cli.App {
	return cli.App{Name: "worker", Stdout: stdout, Stderr: stderr, Commands: WorkerCommands(getenv, stdout, stderr)}
}

// apiApp is the API binary's command line as far as the operator's commands go.
func apiApp(getenv func(string) string, stdout, stderr io.Writer) cli.App {
	return cli.App{Name: "api", Stdout: stdout, Stderr: stderr, Commands: APICommands(getenv, stdout, stderr)}
}

// names are the commands' names, in order.
func names(cmds []cli.Command) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, c.Name)
	}
	return out
}

// A main package that appends these to its own serve and migrate gets every
// operator command of orderflow's binaries, once, none of them serve or migrate.
func TestEachBinaryGetsEveryOperatorCommand(t *testing.T) {
	none := func(string) string { return "" }
	worker := names(WorkerCommands(none, io.Discard, io.Discard))
	want := []string{"bootstrap", "reconcile report", "findings list", "findings ack", "tenants list", "orders show", "orders repair",
		"dlq list", "dlq show", "dlq purge", "dlq redrive", "shadow", "customers receipt", "customers key", "customers reapply", "customers rewrap"}
	if !slices.Equal(worker, want) {
		t.Errorf("worker commands %q, want %q", worker, want)
	}
	api := names(APICommands(none, io.Discard, io.Discard))
	if want := []string{"keys create", "keys list", "keys revoke", "limits set", "limits clear", "limits list"}; !slices.Equal(api, want) {
		t.Errorf("api commands %q, want %q", api, want)
	}
	for _, c := range append(WorkerCommands(none, io.Discard, io.Discard), APICommands(none, io.Discard, io.Discard)...) {
		if c.Run == nil || c.Summary == "" {
			t.Errorf("command %q: no Run or no summary", c.Name)
		}
	}
}

// A dead letter's value is sealed: without the payload keys, dlq show refuses
// before it reads anything.
func TestDLQShowNeedsThePayloadKeys(t *testing.T) {
	env := map[string]string{"KAFKA_BROKERS": "127.0.0.1:1"}
	var out bytes.Buffer
	code := workerApp(func(k string) string { return env[k] }, &out, &out).Run(context.Background(), []string{"dlq", "show", "0:0"})
	if code != 2 || !strings.Contains(out.String(), "PAYLOAD_KEYS is not set") {
		t.Fatalf("dlq show without PAYLOAD_KEYS: exit %d, want 2; output:\n%s", code, out.String())
	}
}
