package consumer

import (
	"strings"
	"testing"

	"github.com/orderflow/orderflow/contracts"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/ingress/refunds"
)

// The refund's schemas and the consumer accept and refuse the same refund
// requests, in the envelope and as CloudEvents; an envelope carries one request.
func TestRefundDecoderKeepsTheContract(t *testing.T) {
	v, err := contracts.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(orders.New(nil, nil), refunds.New(nil, nil, intake.Starter{}))
	const valid = `{"order_id":"ord_1","amount":100,"reason":"requested_by_customer"}`
	payloads := map[string]string{
		"valid":          valid,
		"the rest":       `{"order_id":"ord_1"}`,
		"no order":       `{"amount":100}`,
		"zero amount":    strings.Replace(valid, `100`, `0`, 1),
		"float amount":   strings.Replace(valid, `100`, `1.5`, 1),
		"unknown reason": strings.Replace(valid, `requested_by_customer`, `changed_mind`, 1),
		"unknown field":  strings.Replace(valid, `{"order_id"`, `{"note":"x","order_id"`, 1),
		"order id space": strings.Replace(valid, `ord_1`, `ord 1`, 1),
	}
	for name, p := range payloads {
		_, codeErr := refunds.DecodeEvent([]byte(p))
		if schemaErr := v.Validate(contracts.Refund, []byte(p)); (codeErr == nil) != (schemaErr == nil) {
			t.Errorf("refund %s: code says %v, schema says %v", name, codeErr, schemaErr)
		}
		envelope := `{"eventId":"e1","tenant":"acme","refund":` + p + `}`
		_, codeErr = d.Decode(binary(envelope))
		if schemaErr := v.Validate(contracts.Envelope, []byte(envelope)); (codeErr == nil) != (schemaErr == nil) {
			t.Errorf("envelope with refund %s: code says %v, schema says %v", name, codeErr, schemaErr)
		}
		ce := `{"specversion":"1.0","id":"e1","source":"/support","type":"dev.orderflow.RefundRequested.v1","tenant":"acme","data":` + p + `}`
		ev, codeErr := d.Decode(structured(ce))
		if schemaErr := v.Validate(contracts.CloudEvent, []byte(ce)); (codeErr == nil) != (schemaErr == nil) {
			t.Errorf("CloudEvent with refund %s: code says %v, schema says %v", name, codeErr, schemaErr)
		}
		if codeErr == nil && ev.Kind.Name() != "refund" {
			t.Errorf("CloudEvent with refund %s decoded as a %s", name, ev.Kind.Name())
		}
	}
	both := `{"eventId":"e1","tenant":"acme","order":` + orderJSON + `,"refund":` + valid + `}`
	_, codeErr := d.Decode(binary(both))
	if schemaErr := v.Validate(contracts.Envelope, []byte(both)); codeErr == nil || schemaErr == nil {
		t.Errorf("an envelope with an order and a refund: code says %v, schema says %v; want both to refuse it", codeErr, schemaErr)
	}
	ordersOnlyRefund := `{"eventId":"e1","tenant":"acme","refund":` + valid + `}`
	if _, err := ordersOnly.Decode(binary(ordersOnlyRefund)); err == nil {
		t.Errorf("a decoder without the refund kind took a refund")
	}
}
