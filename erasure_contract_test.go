package orderflow

import (
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/contracts"
	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/ingress/refunds"
)

// The published contract and the consumer, with the erasure kind as every
// binary builds it, accept and refuse the same erasure events: in the envelope
// beside the other kinds, and as CloudEvents of the erasure's type.
func TestErasureEventsKeepTheContract(t *testing.T) {
	v, err := contracts.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	kind, err := erasures{}.Ingress(Platform{})
	if err != nil {
		t.Fatal(err)
	}
	d := consumer.NewDecoder(orders.New(nil, nil), refunds.New(nil, nil, intake.Starter{}), kind)
	const order = `{"customer_id":"cus_1","currency":"USD","items":[{"sku":"a","quantity":1,"unit_amount":100}],"payment_method":"pm"}`
	requests := map[string]string{
		"valid":         `{"customer_id":"cus_1"}`,
		"missing":       `{}`,
		"empty":         `{"customer_id":""}`,
		"129 long":      `{"customer_id":"` + strings.Repeat("c", 129) + `"}`,
		"space":         `{"customer_id":"cus 1"}`,
		"number":        `{"customer_id":7}`,
		"unknown field": `{"customer_id":"cus_1","note":"x"}`,
	}
	for name, r := range requests {
		envelope := `{"eventId":"e1","tenant":"acme","erasure":` + r + `}`
		_, codeErr := d.Decode(kafka.Message{Value: []byte(envelope)})
		if schemaErr := v.Validate(contracts.Envelope, []byte(envelope)); (codeErr == nil) != (schemaErr == nil) {
			t.Errorf("envelope with erasure %s: code says %v, schema says %v", name, codeErr, schemaErr)
		}
		ce := `{"specversion":"1.0","id":"e1","source":"/crm","type":"dev.orderflow.CustomerErasureRequested.v1","tenant":"acme","data":` + r + `}`
		ev, codeErr := d.Decode(kafka.Message{Value: []byte(ce), Headers: []kafka.Header{{Key: "content-type", Value: []byte("application/cloudevents+json")}}})
		if schemaErr := v.Validate(contracts.CloudEvent, []byte(ce)); (codeErr == nil) != (schemaErr == nil) {
			t.Errorf("CloudEvent with erasure %s: code says %v, schema says %v", name, codeErr, schemaErr)
		}
		if codeErr == nil && ev.Kind.Name() != "erasure" {
			t.Errorf("CloudEvent with erasure %s decoded as a %s", name, ev.Kind.Name())
		}
	}
	for _, other := range []string{`"order":` + order, `"refund":{"order_id":"ord_1"}`} {
		both := `{"eventId":"e1","tenant":"acme","erasure":{"customer_id":"cus_1"},` + other + `}`
		_, codeErr := d.Decode(kafka.Message{Value: []byte(both)})
		if schemaErr := v.Validate(contracts.Envelope, []byte(both)); codeErr == nil || schemaErr == nil {
			t.Errorf("%s: code says %v, schema says %v; want both to refuse it", both, codeErr, schemaErr)
		}
	}
}
