//go:build stack

package custkeys_test

import (
	"bytes"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// The Web UI decodes a history through the worker's codec: a personal value in
// a payload shows opened while its customer's key lives, and "[erased]" once it
// is destroyed, never as a decoding error; a payload without one passes as it is.
func TestTheWebUIsCodecShowsPersonalValuesOpenedThenErased(t *testing.T) {
	ctx := newContext(t)
	pool := stacktest.Pool(t)
	keys := open(t, ctx, pool)
	tenant, customer := stacktest.Name("tenant"), stacktest.Name("cus_ui")
	sealed, err := keys.Seal(ctx, tenant, customer, customer)
	if err != nil {
		t.Fatal(err)
	}
	dc := converter.GetDefaultDataConverter()
	order, err := dc.ToPayload(map[string]any{"customer_id": sealed, "amount": 1299})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := dc.ToPayload(map[string]any{"status": "PAID"})
	if err != nil {
		t.Fatal(err)
	}
	deployment := stacktest.Codec(t)
	encoded, err := deployment.Encode([]*commonpb.Payload{order, plain})
	if err != nil {
		t.Fatal(err)
	}
	ui := custkeys.NewRevealing(deployment, keys)

	decoded, err := ui.Decode(encoded)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if !bytes.Contains(decoded[0].Data, []byte(`"customer_id":"`+customer+`"`)) || bytes.Contains(decoded[0].Data, []byte("pd1.")) {
		t.Errorf("a live customer's payload decodes to %s", decoded[0].Data)
	}
	if !bytes.Equal(decoded[1].Data, plain.Data) {
		t.Errorf("a payload without personal values decodes to %s, want %s", decoded[1].Data, plain.Data)
	}

	if _, err := keys.Destroy(ctx, tenant, keys.Hasher().Hash(tenant, customer)); err != nil {
		t.Fatal(err)
	}
	for name, store := range map[string]*custkeys.Store{"the destroying process": keys, "another process": open(t, ctx, pool)} {
		decoded, err := custkeys.NewRevealing(deployment, store).Decode(encoded)
		if err != nil {
			t.Fatalf("%s: an erased customer's payload fails to decode: %v", name, err)
		}
		if !bytes.Contains(decoded[0].Data, []byte(`"customer_id":"[erased]"`)) || bytes.Contains(decoded[0].Data, []byte(customer)) {
			t.Errorf("%s: an erased customer's payload decodes to %s", name, decoded[0].Data)
		}
	}
}
