package shadow_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow/operator/shadow"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/worker"
	"github.com/orderflow/orderflow/workflows"
)

// recorded reads a history recorded from the real server, and the workflow ID
// it ran under (its input's workflow_id: the files do not keep it otherwise).
func recorded(t *testing.T, path string) (string, *historypb.History) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, p := range h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads() {
		var in any
		if json.Unmarshal(p.GetData(), &in) == nil {
			if id := workflowID(in); id != "" {
				return id, h
			}
		}
	}
	t.Fatalf("%s: no workflow ID in its input", path)
	return "", nil
}

// workflowID is the first workflow ID field in a decoded input.
func workflowID(v any) string {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if s, ok := c.(string); ok && (strings.EqualFold(k, "workflowid") || k == "workflow_id") {
				return s
			}
		}
		for _, c := range x {
			if id := workflowID(c); id != "" {
				return id
			}
		}
	}
	return ""
}

func checker(t *testing.T, register func(sdkworker.WorkflowRegistry), extra ...interceptor.WorkerInterceptor) *shadow.Checker {
	t.Helper()
	c, err := shadow.NewChecker(converter.GetDefaultDataConverter(), register, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every recorded history replays on this build with the same money.
func TestRecordedHistoriesPass(t *testing.T) {
	files, _ := filepath.Glob("../../workflows/testdata/*.json")
	if len(files) < 3 {
		t.Fatalf("found %d recorded histories, want at least 3", len(files))
	}
	c := checker(t, worker.RegisterWorkflows)
	for _, f := range files {
		id, h := recorded(t, f)
		if r := c.Check(id, "run-1", h); !r.OK() {
			t.Errorf("%s: %v", filepath.Base(f), r.Failures)
		}
	}
}

// Changes that alter money or commands are caught on a paid order's history,
// each with the field or event it changed.
func TestDrillsOnAPaidOrder(t *testing.T) {
	id, h := recorded(t, "../../workflows/testdata/order_paid.json")
	for _, row := range []struct {
		name     string
		c        *shadow.Checker
		kind     shadow.Kind
		path     string
		produced string
	}{
		{"discount", checker(t, asOrder(discount(1))), shadow.Effect, "$[0].Amount", "2339"},
		{"confirm key", checker(t, asOrder(workflows.Order), &rekey{}), shadow.Effect, "$[0].ConfirmKey", "ofpay_"},
		{"timer first", checker(t, asOrder(sleepFirst)), shadow.Nondeterminism, "", ""},
	} {
		r := row.c.Check(id, "run-1", h)
		if len(r.Failures) != 1 {
			t.Fatalf("%s: %d failures, want 1: %+v", row.name, len(r.Failures), r.Failures)
		}
		f := r.Failures[0]
		if f.Kind != row.kind || f.WorkflowID != id || f.Path != row.path || !strings.Contains(f.Produced, row.produced) || f.Event == "" {
			t.Errorf("%s: %+v; want %s at %q producing %q", row.name, f, row.kind, row.path, row.produced)
		}
		t.Logf("%s: %s\n%s", row.name, f, f.Message)
	}
}

// A run whose first workflow task has not completed has nothing to replay: it
// passes, once its input opens.
func TestUndecidedRunsPass(t *testing.T) {
	id, h := recorded(t, "../../workflows/testdata/order_paid.json")
	h.Events = h.Events[:2]
	if r := checker(t, asOrder(sleepFirst)).Check(id, "run-1", h); !r.OK() {
		t.Fatalf("%+v", r.Failures)
	}
}

// Changes that keep the money and the commands pass.
func TestHonestChangesPass(t *testing.T) {
	id, h := recorded(t, "../../workflows/testdata/order_paid.json")
	for name, wf := range map[string]orderFunc{"log line": logged, "versioned activity after": notifiedAfter, "discount of other orders": discount(2)} {
		if r := checker(t, asOrder(wf)).Check(id, "run-1", h); !r.OK() {
			t.Errorf("%s: %+v", name, r.Failures)
		}
	}
}

// A run this build cannot read fails: its input sealed under a key the build's
// keyring lacks, or its workflow type not registered.
func TestUnreadableHistoriesFail(t *testing.T) {
	id, h := recorded(t, "../../workflows/testdata/order_paid.json")
	sealing, other := keyring(t, "old", 1), keyring(t, "new", 2)
	started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	sealed, err := payloadcodec.New(sealing).Encode(started.GetInput().GetPayloads())
	if err != nil {
		t.Fatal(err)
	}
	started.Input.Payloads = sealed
	for _, row := range []struct {
		ring *payloadcodec.Keyring
		want int
	}{{sealing, 0}, {other, 1}} {
		dc, _ := payloadcodec.Converters(payloadcodec.New(row.ring))
		c, err := shadow.NewChecker(dc, worker.RegisterWorkflows)
		if err != nil {
			t.Fatal(err)
		}
		r := c.Check(id, "run-1", h)
		if len(r.Failures) != row.want || (row.want > 0 && r.Failures[0].Kind != shadow.Undecodable) {
			t.Fatalf("keyring %s: %+v, want %d undecodable", row.ring.WriterID(), r.Failures, row.want)
		}
	}
	_, h = recorded(t, "../../workflows/testdata/refund_succeeded.json")
	for _, n := range []int{len(h.Events), 2} { // replayed, and not yet started by any worker
		h.Events = h.Events[:n]
		if r := checker(t, asOrder(logged)).Check(id, "run-1", h); len(r.Failures) != 1 || r.Failures[0].Kind != shadow.Replay ||
			!strings.Contains(r.Failures[0].Message, "Refund is not registered") {
			t.Fatalf("unregistered type, %d events: %+v", n, r.Failures)
		}
	}
}

func keyring(t *testing.T, id string, fill byte) *payloadcodec.Keyring {
	t.Helper()
	r, err := payloadcodec.ParseKeyring(id + ":" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
