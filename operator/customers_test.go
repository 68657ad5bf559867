package operator

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/customers/erasure"
	"github.com/orderflow/orderflow/customers/receipt"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/personal"
)

// signedReceipt is a receipt of erasure era_1 signed with a fresh key.
func signedReceipt(t *testing.T) (receipt.Signed, ed25519.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	s, err := receipt.Sign(receipt.Receipt{ID: "era_1", Tenant: "acme", CustomerHash: "c0ffee", ErasedAt: at,
		Stores: []receipt.Store{{Name: "orders", Affected: 3, Kept: "amounts"}, {Name: "idempotency_keys", Affected: 2}},
		Keys:   []receipt.Key{{ID: "ck_0123", Fingerprint: "fp-abc", DestroyedAt: at.Add(-time.Minute)}}}, priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, pub
}

// receiptCmd runs `worker customers receipt args` with stdin and no settings:
// its exit status, stdout and stderr.
func receiptCmd(stdin string, args ...string) (int, string, string) {
	var out, errs bytes.Buffer
	none := func(string) string { return "" }
	app := cli.App{Name: "worker", Stdout: &out, Stderr: &errs,
		Commands: []cli.Command{customersReceiptCommand(none, strings.NewReader(stdin), &out, &errs)}}
	code := app.Run(context.Background(), append([]string{"customers", "receipt"}, args...))
	return code, out.String(), errs.String()
}

func writeFile(t *testing.T, name string, v any) string {
	t.Helper()
	b, ok := v.([]byte)
	if !ok {
		var err error
		if b, err = json.MarshalIndent(v, "", "  "); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A receipt verifies with the published key, given as its JSON file or its bare
// base64, from a file or stdin, bare or in the erasure's answer: exit 0 and a
// summary of what it says.
func TestCustomersReceiptVerifiesWithAPublishedKey(t *testing.T) {
	signed, pub := signedReceipt(t)
	keyFile := writeFile(t, "key.json", receipt.Publish(pub))
	bare := receipt.Publish(pub).Key
	answer, err := json.Marshal(erasure.Answer{ID: "era_1", Status: erasure.StatusErased, Receipt: &signed})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(signed)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		stdin string
		args  []string
	}{
		"signed file, key file":     {"", []string{"--verify", writeFile(t, "r.json", signed), "--key", keyFile}},
		"signed on stdin, bare key": {string(doc), []string{"--verify", "-", "--key", bare}},
		"answer file, key JSON":     {"", []string{"--verify", writeFile(t, "a.json", answer), "--key", string(mustJSON(t, receipt.Publish(pub)))}},
		"answer on stdin":           {string(answer), []string{"--verify", "-", "--key", keyFile}},
	}
	for name, c := range cases {
		code, out, errs := receiptCmd(c.stdin, c.args...)
		if code != 0 {
			t.Errorf("%s: exit %d, want 0\n%s%s", name, code, out, errs)
			continue
		}
		for _, want := range []string{"era_1", "acme", "c0ffee", "2026-03-04T05:06:07Z", receipt.KeyID(pub),
			"orders", "3", "amounts", "idempotency_keys", "ck_0123", "fp-abc", "2026-03-04T05:05:07Z",
			"receipt of erasure era_1 verifies"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the summary lacks %q:\n%s", name, want, out)
			}
		}
	}
}

// -o json prints the verified receipt, the summary going to stderr.
func TestCustomersReceiptPrintsJSON(t *testing.T) {
	signed, pub := signedReceipt(t)
	code, out, errs := receiptCmd("", "--verify", writeFile(t, "r.json", signed), "--key", receipt.Publish(pub).Key, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var got []receipt.Receipt
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(got) != 1 || got[0].ID != "era_1" || got[0].Tenant != "acme" || len(got[0].Stores) != 2 || got[0].Stores[0].Affected != 3 ||
		len(got[0].Keys) != 1 || got[0].Keys[0].Fingerprint != "fp-abc" || got[0].SigningKey != receipt.KeyID(pub) {
		t.Fatalf("receipt %+v", got)
	}
	if !strings.Contains(errs, "verifies") {
		t.Errorf("no summary on stderr: %q", errs)
	}
}

// A changed value, another key, or an answer around another erasure's receipt
// does not verify: exit 1 and the reason.
func TestCustomersReceiptRefusesForgeries(t *testing.T) {
	signed, pub := signedReceipt(t)
	_, other := signedReceipt(t)
	tampered := signed
	tampered.Receipt = bytes.Replace(signed.Receipt, []byte(`"affected":3`), []byte(`"affected":0`), 1)
	if bytes.Equal(tampered.Receipt, signed.Receipt) {
		t.Fatal("the receipt was not tampered with")
	}
	wrongAnswer, err := json.Marshal(erasure.Answer{ID: "era_2", Status: erasure.StatusErased, Receipt: &signed})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		"tampered":                {"--verify", writeFile(t, "t.json", tampered), "--key", receipt.Publish(pub).Key},
		"wrong key":               {"--verify", writeFile(t, "r.json", signed), "--key", receipt.Publish(other).Key},
		"another erasure's":       {"--verify", writeFile(t, "w.json", wrongAnswer), "--key", receipt.Publish(pub).Key},
		"signature of another":    {"--verify", writeFile(t, "s.json", receipt.Signed{Receipt: signed.Receipt, Signature: forge(t)}), "--key", receipt.Publish(pub).Key},
		"published id of another": {"--verify", writeFile(t, "r.json", signed), "--key", string(mustJSON(t, receipt.Publish(other)))},
	}
	for name, args := range cases {
		code, out, errs := receiptCmd("", args...)
		if code != 1 || !strings.Contains(errs, "receipt does not verify") || strings.Contains(out, "verifies") {
			t.Errorf("%s: exit %d, want 1 with \"receipt does not verify\"\nstdout: %s\nstderr: %s", name, code, out, errs)
		}
	}
}

// forge is a well-formed signature of other bytes by another key.
func forge(t *testing.T) string {
	t.Helper()
	s, _ := signedReceipt(t)
	return s.Signature
}

// An erasure still waiting has no receipt; what is no receipt, or no key, is
// refused with its reason; --verify is required.
func TestCustomersReceiptRefusesWhatIsNoReceipt(t *testing.T) {
	signed, pub := signedReceipt(t)
	key := receipt.Publish(pub).Key
	doc := string(mustJSON(t, signed))
	cases := []struct {
		name, stdin string
		args        []string
		code        int
		want        string
	}{
		{"waiting", `{"id":"era_1","status":"WAITING"}`, []string{"--verify", "-", "--key", key}, 1, "erasure era_1 is WAITING: it has no receipt yet"},
		{"not JSON", `receipt`, []string{"--verify", "-", "--key", key}, 1, "not JSON"},
		{"no signature", `{"receipt":{"id":"era_1"}}`, []string{"--verify", "-", "--key", key}, 1, "neither a signed receipt"},
		{"no file", "", []string{"--verify", filepath.Join(t.TempDir(), "none.json"), "--key", key}, 1, "read the receipt"},
		{"no --verify", "", []string{"--key", key}, 2, "want --verify"},
		{"bad key", doc, []string{"--verify", "-", "--key", "not-a-key"}, 2, "--key"},
		{"no key, no database", doc, []string{"--verify", "-"}, 1, "DATABASE_URL"},
	}
	for _, c := range cases {
		code, out, errs := receiptCmd(c.stdin, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, want %d with %q\nstdout: %s\nstderr: %s", c.name, code, c.code, c.want, out, errs)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// --since is a duration back from now or an RFC3339 time in the past.
func TestCustomersReapplySince(t *testing.T) {
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Time{"36h": now.Add(-36 * time.Hour), "2026-03-01T08:00:00Z": time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC),
		"2026-03-01T09:00:00+01:00": time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)} {
		got, err := parseSince(v, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("--since %s: %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"", "yesterday", "-1h", "0s", "2026-03-05T00:00:00Z"} {
		if _, err := parseSince(v, now); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("--since %q: %v, want a usage error", v, err)
		}
	}
}

// The query selects the erasure kind's completed runs closed after --since, of
// one tenant if asked.
func TestCustomersReapplyQuery(t *testing.T) {
	since := time.Date(2026, 3, 1, 9, 0, 0, 0, time.FixedZone("x", 3600))
	if got, want := reapplyQuery(reapplyOptions{Since: since}),
		"OrderflowKind = 'erasure' AND ExecutionStatus = 'Completed' AND CloseTime > '2026-03-01T08:00:00Z'"; got != want {
		t.Errorf("query %q, want %q", got, want)
	}
	if got, want := reapplyQuery(reapplyOptions{Since: since, Tenant: "acme"}),
		"OrderflowKind = 'erasure' AND ExecutionStatus = 'Completed' AND CloseTime > '2026-03-01T08:00:00Z' AND OrderflowTenant = 'acme'"; got != want {
		t.Errorf("query %q, want %q", got, want)
	}
}

// fakeRuns lists its runs, whatever the query, and keeps the query.
type fakeRuns struct {
	runs  []erasureRun
	query string
}

func (f *fakeRuns) Completed(_ context.Context, query string, each func(erasureRun) error) error {
	f.query = query
	for _, r := range f.runs {
		if err := each(r); err != nil {
			return err
		}
	}
	return nil
}

// fakeData is what a restore brought back, by workflow ID; Apply erases it.
type fakeData struct {
	live, answers map[string]int64
	final         map[string]bool
	applied       int
}

func (f *fakeData) Pending(_ context.Context, r erasureRun) (pending, error) {
	return pending{Keys: f.live[r.WorkflowID], Answers: f.answers[r.WorkflowID], Receipt: !f.final[r.WorkflowID]}, nil
}

func (f *fakeData) Apply(_ context.Context, r erasureRun) error {
	f.applied++
	f.live[r.WorkflowID], f.answers[r.WorkflowID], f.final[r.WorkflowID] = 0, 0, true
	return nil
}

func restored() (*fakeRuns, *fakeData) {
	run := func(tenant, id string) erasureRun {
		wf := "erasure:" + tenant + ":http:" + id
		return erasureRun{WorkflowID: wf, ClosedAt: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC),
			Input: erasure.Input{Tenant: tenant, WorkflowID: wf, ID: id, CustomerHash: []byte{1, 2}}}
	}
	runs := &fakeRuns{runs: []erasureRun{run("acme", "era_a"), run("beta", "era_b")}}
	data := &fakeData{live: map[string]int64{runs.runs[0].WorkflowID: 2}, answers: map[string]int64{runs.runs[1].WorkflowID: 3},
		final: map[string]bool{runs.runs[1].WorkflowID: true}}
	return runs, data
}

// reapplyJSON runs printReapply with -o json: its rows and summary.
func reapplyJSON(t *testing.T, runs erasureRuns, data erasureData, o reapplyOptions) ([]reapplied, string, error) {
	t.Helper()
	var out, errs bytes.Buffer
	err := printReapply(context.Background(), runs, data, o, cli.JSON, &out, &errs)
	var rows []reapplied
	if jerr := json.Unmarshal(out.Bytes(), &rows); jerr != nil {
		t.Fatalf("%v:\n%s", jerr, out.String())
	}
	return rows, errs.String(), err
}

// A dry run lists what each erasure would change and changes nothing; a run
// erases it again, and a second run finds nothing left.
func TestCustomersReapplyIsIdempotent(t *testing.T) {
	runs, data := restored()
	o := reapplyOptions{Since: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), DryRun: true}
	rows, sum, err := reapplyJSON(t, runs, data, o)
	if err != nil || data.applied != 0 || len(rows) != 2 || rows[0].Keys != 2 || !rows[0].Receipt || rows[1].Answers != 3 || rows[1].Receipt ||
		!rows[0].DryRun || !strings.Contains(sum, "would destroy 2 keys again, scrub 3 stored answers, restore 1 receipts") {
		t.Fatalf("dry run: %v, applied %d, rows %+v\n%s", err, data.applied, rows, sum)
	}
	if !strings.Contains(runs.query, "OrderflowKind = 'erasure'") || !strings.Contains(runs.query, "CloseTime > '2026-03-01T00:00:00Z'") {
		t.Errorf("query %q", runs.query)
	}

	o.DryRun = false
	rows, sum, err = reapplyJSON(t, runs, data, o)
	if err != nil || data.applied != 2 || len(rows) != 2 || rows[0].ID != "era_a" || rows[0].Tenant != "acme" || rows[0].Keys != 2 ||
		rows[1].Answers != 3 || rows[0].DryRun || !strings.Contains(sum, "2 erasures completed since 2026-03-01T00:00:00Z re-applied: 2 keys destroyed again, 3 stored answers scrubbed, 1 receipts restored") {
		t.Fatalf("run: %v, applied %d, rows %+v\n%s", err, data.applied, rows, sum)
	}

	rows, sum, err = reapplyJSON(t, runs, data, o)
	if err != nil || len(rows) != 2 || rows[0].Keys+rows[1].Keys+rows[0].Answers+rows[1].Answers != 0 || rows[0].Receipt || rows[1].Receipt ||
		!strings.Contains(sum, "0 keys destroyed again, 0 stored answers scrubbed, 0 receipts restored") {
		t.Fatalf("second run: %v, rows %+v\n%s", err, rows, sum)
	}
}

// An erasure whose input names no customer, or another workflow, stops the
// run before anything of it is changed.
func TestCustomersReapplyRefusesABadInput(t *testing.T) {
	for name, bad := range map[string]func(*erasureRun){
		"no hash":        func(r *erasureRun) { r.Input.CustomerHash = nil },
		"no tenant":      func(r *erasureRun) { r.Input.Tenant = "" },
		"other workflow": func(r *erasureRun) { r.Input.WorkflowID = "erasure:acme:http:other" },
	} {
		runs, data := restored()
		bad(&runs.runs[0])
		_, _, err := reapplyJSON(t, runs, data, reapplyOptions{Since: time.Now().Add(-time.Hour)})
		if err == nil || data.applied != 0 {
			t.Errorf("%s: %v, applied %d; want an error and nothing applied", name, err, data.applied)
		}
	}
}

// A table prints a line per erasure and the summary.
func TestCustomersReapplyTable(t *testing.T) {
	runs, data := restored()
	var out bytes.Buffer
	if err := printReapply(context.Background(), runs, data, reapplyOptions{Since: time.Now().Add(-time.Hour)}, cli.Table, &out, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ERASURE") || !strings.Contains(lines[1], "era_a") || !strings.Contains(lines[1], "restored") ||
		!strings.Contains(lines[2], "era_b") || !strings.Contains(lines[2], "kept") || !strings.Contains(lines[3], "2 keys destroyed again") ||
		!strings.Contains(lines[3], "up to "+custkeys.CacheTTL().String()+" more") {
		t.Fatalf("table:\n%s", out.String())
	}
}

// reapply refuses, before any connection, a call without --since or with a
// tenant that is no tenant's name.
func TestCustomersReapplyUsage(t *testing.T) {
	var out bytes.Buffer
	none := func(string) string { return "" }
	app := cli.App{Name: "worker", Stdout: &out, Stderr: &out, Commands: []cli.Command{customersReapplyCommand(none, &out, &out)}}
	for _, args := range [][]string{{}, {"--since", "yesterday"}, {"--since", "1h", "--tenant", "a'b"}, {"--since", "1h", "extra"}} {
		out.Reset()
		if code := app.Run(context.Background(), append([]string{"customers", "reapply"}, args...)); code != 2 {
			t.Errorf("reapply %q: exit %d, want 2\n%s", args, code, out.String())
		}
	}
}

// Without the payload keys, orders show shows a sealed customer ID as
// "[sealed]", and a plain one (an order placed before sealing) as it is.
func TestCustomersSealedIDsWithoutTheKeys(t *testing.T) {
	k, err := personal.NewKey(personal.NewKeyID(), "acme", personal.NewRaw())
	if err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string]string{k.Seal("cus_1"): "[sealed]", "cus_plain": "cus_plain", "": ""} {
		if got, err := (sealedIDs{}).Shown(context.Background(), "acme", value); err != nil || got != want {
			t.Errorf("Shown(%q) = %q, %v; want %q", value, got, err, want)
		}
	}
}
