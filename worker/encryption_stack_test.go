//go:build stack

package worker_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/workflows"
)

// rawHistory is the workflow's history as Temporal stores it, read by a client
// without keys: every event serialized, and the key IDs of its encrypted payloads.
func rawHistory(t *testing.T, id string) (raw []byte, keyIDs map[string]int) {
	t.Helper()
	c := stacktest.TemporalWithKeys(t, "")
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	keyIDs = map[string]int{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b...)
		stacktest.WalkPayloads(ev.ProtoReflect().Interface(), func(p *commonpb.Payload) {
			if string(p.Metadata["encoding"]) == payloadcodec.Encoding {
				keyIDs[string(p.Metadata[payloadcodec.MetaKeyID])]++
			}
		})
	}
	return raw, keyIDs
}

// stackCodec is the codec of the stack's PAYLOAD_KEYS, which the workers use.
func stackCodec(t *testing.T) *payloadcodec.Codec {
	t.Helper()
	ring, err := payloadcodec.ParseKeyring(stacktest.Env(t)["PAYLOAD_KEYS"])
	if err != nil {
		t.Fatal(err)
	}
	return payloadcodec.New(ring)
}

func randomKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// A paid order's history, read raw from Temporal, holds neither its card token nor
// its customer id: both are inside encrypted payloads.
func TestHistoryHoldsNoCardTokenOrCustomerInPlainText(t *testing.T) {
	h := newHarness(t)
	h.StartWorker(t)
	id, in := h.placeOrder(stacktest.Name("key"), "pm_card_visa")
	in.Order.CustomerID = stacktest.Name("cus_probe")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res workflows.OrderResult
	if err := h.execute(t, ctx, id, in).Get(ctx, &res); err != nil || res.Status != order.StatusPaid {
		t.Fatalf("order: %+v, %v", res, err)
	}
	raw, keyIDs := rawHistory(t, id)
	for _, secret := range []string{in.Order.PaymentMethod, in.Order.CustomerID} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("history shows %q in plain text", secret)
		}
	}
	if len(keyIDs) == 0 {
		t.Fatal("no encrypted payload in the history")
	}
	t.Logf("history: %d bytes, encrypted payloads by key: %v", len(raw), keyIDs)
}

// Key rotation: an order started while key 1 wrote is finished by a worker whose
// keyring writes with key 2 and still holds key 1; its history has payloads of both
// keys, and a keyring without key 1 cannot read it.
func TestKeyRotationOldHistoryStillReads(t *testing.T) {
	k1, k2 := "k1:"+randomKey(t), "k2:"+randomKey(t)
	h := newHarness(t)
	h.Temporal = stacktest.TemporalWithKeys(t, k1)
	id, in := h.placeOrder(stacktest.Name("key"), "pm_card_visa")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h.execute(t, ctx, id, in) // written under key 1; no worker runs yet
	// No deployment holds these keys: the run goes at cleanup, so a shadow of the
	// stack's runs (scripts/shadow-gate) does not meet a history it cannot open.
	keyless := stacktest.TemporalWithKeys(t, "")
	t.Cleanup(func() {
		_, _ = keyless.WorkflowService().DeleteWorkflowExecution(context.Background(), &workflowservice.DeleteWorkflowExecutionRequest{
			Namespace: h.Env["TEMPORAL_NAMESPACE"], WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id}})
	})

	h.Temporal = stacktest.TemporalWithKeys(t, k2+","+k1)
	h.StartWorker(t)
	var res workflows.OrderResult
	if err := h.Temporal.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil || res.Status != order.StatusPaid {
		t.Fatalf("order after rotation: %+v, %v", res, err)
	}
	if status, _ := h.orderRow(t, in.Order.ID); status != string(order.StatusPaid) {
		t.Fatalf("order row %s, want PAID", status)
	}
	_, keyIDs := rawHistory(t, id)
	if keyIDs["k1"] == 0 || keyIDs["k2"] == 0 {
		t.Fatalf("payloads by key %v: want both k1 (the start) and k2 (after rotation)", keyIDs)
	}
	var again workflows.PlaceOrder
	if err := firstInput(t, ctx, id, k2, &again); err == nil {
		t.Fatal("a keyring without key 1 read the input written under key 1")
	}
	if err := firstInput(t, ctx, id, k2+","+k1, &again); err != nil || again.Order.ID != in.Order.ID {
		t.Fatalf("rotated keyring reads the input: %+v, %v", again.Order.ID, err)
	}
}

// firstInput decodes the workflow's stored input with the keyring keys.
func firstInput(t *testing.T, ctx context.Context, id, keys string, v any) error {
	t.Helper()
	ring, err := payloadcodec.ParseKeyring(keys)
	if err != nil {
		t.Fatal(err)
	}
	dc, _ := payloadcodec.Converters(payloadcodec.New(ring))
	it := stacktest.TemporalWithKeys(t, "").GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	ev, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	return dc.FromPayloads(ev.GetWorkflowExecutionStartedEventAttributes().GetInput(), v)
}

// stackConverter is the data converter of the stack's Temporal clients.
func stackConverter(t *testing.T) converter.DataConverter {
	dc, _ := payloadcodec.Converters(stackCodec(t))
	return dc
}
