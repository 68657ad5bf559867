//go:build stack

package erasure_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"

	"github.com/orderflow/orderflow/customers/erasure"
	"github.com/orderflow/orderflow/customers/receipt"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/platform/personal"
	"github.com/orderflow/orderflow/platform/records"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// TestAnErasureOnTheRealStack erases a customer whose order is still pending: the
// erasure waits until it is paid, then destroys the customer's key and records its
// signed receipt. Its history is replayed against the current code and, with
// ORDERFLOW_RECORD_HISTORIES=1, written to testdata, where TestReplayRecordedHistories
// guards it without a server. It takes the workflow's wait for other processes'
// caches (custkeys.CacheTTL) and more.
func TestAnErasureOnTheRealStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pool, temporal, codec := stacktest.Pool(t), stacktest.Temporal(t), stacktest.Codec(t)
	keys, err := custkeys.Open(ctx, pool, codec)
	if err != nil {
		t.Fatal(err)
	}
	recs := records.NewStore(pool)
	queue := stacktest.Name("erasure")
	w := sdkworker.New(temporal, queue, sdkworker.Options{})
	w.RegisterWorkflow(erasure.EraseCustomer)
	w.RegisterActivity(erasure.NewActivities(pool, keys, recs))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	tenant, customer := stacktest.Name("tenant"), stacktest.Name("cus")
	hash := keys.Hasher().Hash(tenant, customer)
	sealed, err := keys.Seal(ctx, tenant, customer, customer)
	if err != nil {
		t.Fatal(err)
	}
	orderID := stacktest.Name("ord")
	if _, err := pool.Exec(ctx, `INSERT INTO orders (id, tenant, workflow_id, customer_id, items, amount, currency, status, customer_hash)
		VALUES ($1, $2, $3, $4, '[]', 1299, 'USD', 'PENDING', $5)`, orderID, tenant, "order:"+tenant+":http:"+orderID, sealed, hash); err != nil {
		t.Fatal(err)
	}
	in := erasure.Input{Tenant: tenant, WorkflowID: "erasure:" + tenant + ":http:e1", ID: stacktest.Name("era"), CustomerHash: hash, Print: []byte{1}}
	if _, err := recs.Record(ctx, records.Record{Tenant: tenant, Kind: erasure.KindName, ID: in.ID, WorkflowID: in.WorkflowID,
		Status: erasure.StatusWaiting, Fingerprint: in.Print, Body: json.RawMessage(`{"status":"WAITING"}`)}); err != nil {
		t.Fatal(err)
	}
	run, err := temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: in.WorkflowID, TaskQueue: queue}, erasure.EraseCustomer, in)
	if err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, 30*time.Second, "the erasure to wait on the pending order", func() bool {
		return hasEvent(t, ctx, temporal, in.WorkflowID, enumspb.EVENT_TYPE_TIMER_STARTED)
	})
	if _, err := pool.Exec(ctx, `UPDATE orders SET status = 'PAID' WHERE id = $1`, orderID); err != nil {
		t.Fatal(err)
	}
	var signed receipt.Signed
	if err := run.Get(ctx, &signed); err != nil {
		t.Fatal(err)
	}
	checkErased(t, ctx, keys, recs, in, sealed, signed)
	hist := history(t, ctx, temporal, in.WorkflowID)
	replayAndRecord(t, codec, "erasure_waited", hist, customer)
}

// checkErased: the receipt verifies and counts the order and the key, the record
// answers it, and the customer's sealed ID is erased.
func checkErased(t *testing.T, ctx context.Context, keys *custkeys.Store, recs *records.Store, in erasure.Input, sealed string, signed receipt.Signed) {
	t.Helper()
	r, err := receipt.Verify(signed, keys.Signer().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	keyID, _ := personal.KeyID(sealed)
	if r.ID != in.ID || r.Tenant != in.Tenant || r.Stores[0].Name != "orders" || r.Stores[0].Affected != 1 ||
		len(r.Keys) != 1 || r.Keys[0].ID != keyID {
		t.Fatalf("receipt %+v: want one order and the key %s", r, keyID)
	}
	rec, err := recs.GetByWorkflow(ctx, in.Tenant, in.WorkflowID)
	if err != nil {
		t.Fatal(err)
	}
	var answer erasure.Answer
	if err := json.Unmarshal(rec.Body, &answer); err != nil || rec.Status != erasure.StatusErased || !rec.Final ||
		answer.Receipt == nil || answer.Receipt.Signature != signed.Signature {
		t.Fatalf("record %s final %t: %s, %v; want ERASED with the receipt", rec.Status, rec.Final, rec.Body, err)
	}
	if got, err := keys.Reveal(ctx, in.Tenant, sealed); !errors.Is(err, personal.ErrErased) {
		t.Fatalf("the customer's ID revealed after the erasure: %q, %v", got, err)
	}
}

func hasEvent(t *testing.T, ctx context.Context, c client.Client, id string, want enumspb.EventType) bool {
	for _, e := range history(t, ctx, c, id).Events {
		if e.GetEventType() == want {
			return true
		}
	}
	return false
}

func history(t *testing.T, ctx context.Context, c client.Client, id string) *historypb.History {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	hist := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, e)
	}
	return hist
}

// replayAndRecord replays hist against the current workflow, checks that the
// customer's ID is nowhere in it, and with ORDERFLOW_RECORD_HISTORIES=1 writes it
// decrypted to testdata/name.json.
func replayAndRecord(t *testing.T, codec *payloadcodec.Codec, name string, hist *historypb.History, customer string) {
	t.Helper()
	dc, fc := payloadcodec.Converters(codec)
	replayer, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{DataConverter: dc, FailureConverter: fc})
	if err != nil {
		t.Fatal(err)
	}
	replayer.RegisterWorkflow(erasure.EraseCustomer)
	if err := replayer.ReplayWorkflowHistory(tlog.NewStructuredLogger(stacktest.Logger(t)), hist); err != nil {
		t.Fatalf("replay %s: %v", name, err)
	}
	// Decrypted: the stack's key is its own, the fixtures are everyone's.
	stacktest.WalkPayloads(hist, func(p *commonpb.Payload) {
		dec, err := codec.Decode([]*commonpb.Payload{p})
		if err != nil {
			t.Fatal(err)
		}
		if dec[0] != p {
			proto.Reset(p)
			proto.Merge(p, dec[0])
		}
	})
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(customer)) {
		t.Fatal("the customer's ID is in the erasure's history")
	}
	if os.Getenv("ORDERFLOW_RECORD_HISTORIES") == "1" {
		if err := os.WriteFile(filepath.Join("testdata", name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
