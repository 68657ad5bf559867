//go:build stack

package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/testkit/stacktest"
)

// run runs the worker binary's command line with DATABASE_URL alone, as an
// operator would: its exit status, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	env := stacktest.Env(t)
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return env[k]
		}
		return ""
	}
	var out, errs bytes.Buffer
	code := workerApp(getenv, &out, &errs).Run(context.Background(), args)
	return code, out.String(), errs.String()
}

// listed is findings list -o json of one kind.
func listed(t *testing.T, kind string, open bool) []findingJSON {
	t.Helper()
	args := []string{"findings", "list", "--kind", kind, "-o", "json"}
	if open {
		args = append(args, "--open")
	}
	code, out, errs := run(t, args...)
	var rows []findingJSON
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("findings list: exit %d\n%s%s", code, out, errs)
	}
	return rows
}

// Findings are a queue: listed open until acknowledged, acknowledged once (a
// second ack says so and keeps the first), and an unknown ID acknowledges nothing.
func TestFindingsAreAQueueAnOperatorAcknowledges(t *testing.T) {
	ctx := context.Background()
	pool := stacktest.Pool(t)
	kind := stacktest.Name("kind")
	var ids []string
	for i := range 3 {
		var id int64
		if err := pool.QueryRow(ctx, `
			INSERT INTO reconcile_findings (kind, action, order_id, tenant, provider_id, amount, currency, detail)
			VALUES ($1, 'reported', $2, 'acme', $3, 100, 'USD', 'd') RETURNING id`,
			kind, "ord_"+strconv.Itoa(i), "ch_"+strconv.Itoa(i)).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	if rows := listed(t, kind, true); len(rows) != 3 || rows[0].OrderID != "ord_0" || rows[0].Tenant != "acme" || rows[0].AckedAt != nil {
		t.Fatalf("open before any ack: %+v", rows)
	}

	code, out, errs := run(t, "findings", "ack", ids[0], ids[1], "--by", "ana", "--note", "refunded by hand")
	if code != 0 || strings.Count(out, "acknowledged by ana") != 2 {
		t.Fatalf("ack: exit %d\n%s%s", code, out, errs)
	}
	open := listed(t, kind, true)
	if len(open) != 1 || strconv.FormatInt(open[0].ID, 10) != ids[2] {
		t.Fatalf("open after acking two: %+v", open)
	}
	all := listed(t, kind, false)
	if len(all) != 3 || all[0].AckedAt == nil || all[0].AckedBy != "ana" || all[0].AckNote != "refunded by hand" || all[2].AckedBy != "" {
		t.Fatalf("all after acking two: %+v", all)
	}

	code, out, _ = run(t, "findings", "ack", "--by", "bo", ids[0])
	if code != 0 || !strings.Contains(out, "finding "+ids[0]+": already acknowledged") || !strings.Contains(out, "by ana") {
		t.Fatalf("second ack: exit %d\n%s", code, out)
	}
	if again := listed(t, kind, false); again[0].AckedBy != "ana" || !again[0].AckedAt.Equal(*all[0].AckedAt) {
		t.Fatalf("a second ack changed the first: %+v", again[0])
	}

	code, _, errs = run(t, "findings", "ack", ids[2], "999999999999", "--by", "ana")
	if code != 1 || !strings.Contains(errs, "no finding with ID [999999999999]; nothing was acknowledged") {
		t.Fatalf("unknown ID: exit %d\n%s", code, errs)
	}
	if open := listed(t, kind, true); len(open) != 1 {
		t.Fatalf("an ack with an unknown ID acknowledged %d of the others", 1-len(open))
	}
}
