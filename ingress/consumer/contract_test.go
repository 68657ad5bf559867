package consumer

import (
	"encoding/json"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/contracts"
	"github.com/orderflow/orderflow/ingress/orders"
)

// TestDecoderKeepsTheContract: the published schemas and the consumer accept and
// refuse the same messages, so a field renamed or a rule changed on one side only
// fails here. The schemas cannot say two things the code checks: that the tenant
// exists and that the items' total fits in 64 bits.
func TestDecoderKeepsTheContract(t *testing.T) {
	v, err := contracts.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{
		"valid":          orderJSON,
		"lower currency": strings.Replace(orderJSON, `"USD"`, `"usd"`, 1), // the code is lenient; the contract asks upper-case
		"unknown field":  strings.Replace(orderJSON, `{"customer_id"`, `{"note":"x","customer_id"`, 1),
		"no items":       `{"customer_id":"cus_1","currency":"USD","items":[],"payment_method":"pm_card_visa"}`,
		"zero quantity":  strings.Replace(orderJSON, `"quantity":1`, `"quantity":0`, 1),
		"float amount":   strings.Replace(orderJSON, `"unit_amount":100`, `"unit_amount":1.5`, 1),
		"long sku":       strings.Replace(orderJSON, `"sku":"a"`, `"sku":"`+strings.Repeat("a", 129)+`"`, 1),
		"sku with space": strings.Replace(orderJSON, `"sku":"a"`, `"sku":"a b"`, 1),
		"no customer":    strings.Replace(orderJSON, `"customer_id":"cus_1",`, ``, 1),
		"bad currency":   strings.Replace(orderJSON, `"USD"`, `"XYZ"`, 1),
		"item field":     strings.Replace(orderJSON, `"sku":"a"`, `"sku":"a","x":1`, 1),
	}
	lenient := map[string]bool{"lower currency": true}
	for name, o := range bodies {
		_, codeErr := orders.DecodeRequest([]byte(o))
		schemaErr := v.Validate(contracts.Order, []byte(o))
		if (codeErr == nil) != (schemaErr == nil) && !(lenient[name] && codeErr == nil) {
			t.Errorf("order %s: code says %v, schema says %v", name, codeErr, schemaErr)
		}
		envelope := `{"eventId":"e1","tenant":"acme","order":` + o + `}`
		_, codeErr = ordersOnly.Decode(binary(envelope))
		schemaErr = v.Validate(contracts.Envelope, []byte(envelope))
		if (codeErr == nil) != (schemaErr == nil) && !(lenient[name] && codeErr == nil) {
			t.Errorf("envelope with order %s: code says %v, schema says %v", name, codeErr, schemaErr)
		}
		ce := `{"specversion":"1.0","id":"e1","source":"/shop","type":"` + orders.RequestedType + `","tenant":"acme","ext":7,"data":` + o + `}`
		_, codeErr = ordersOnly.Decode(structured(ce))
		schemaErr = v.Validate(contracts.CloudEvent, []byte(ce))
		if (codeErr == nil) != (schemaErr == nil) && !(lenient[name] && codeErr == nil) {
			t.Errorf("CloudEvent with order %s: code says %v, schema says %v", name, codeErr, schemaErr)
		}
	}
	envelopes := map[string]string{
		"eventId with space": `{"eventId":"e 1","tenant":"acme","order":` + orderJSON + `}`,
		"no eventId":         `{"tenant":"acme","order":` + orderJSON + `}`,
		"bad tenant":         `{"eventId":"e1","tenant":"Acme","order":` + orderJSON + `}`,
		"extra field":        `{"eventId":"e1","tenant":"acme","x":1,"order":` + orderJSON + `}`,
		"long eventId":       `{"eventId":"` + strings.Repeat("e", 256) + `","tenant":"acme","order":` + orderJSON + `}`,
	}
	for name, e := range envelopes {
		_, codeErr := ordersOnly.Decode(binary(e))
		if codeErr == nil || v.Validate(contracts.Envelope, []byte(e)) == nil {
			t.Errorf("envelope %s: code says %v; want both to refuse it", name, codeErr)
		}
	}
	base := `"specversion":"1.0","id":"e1","source":"/shop","type":"` + orders.RequestedType + `","tenant":"acme","data":` + orderJSON
	cloudEvents := map[string]string{
		"old spec":     strings.Replace(base, `"1.0"`, `"0.3"`, 1),
		"another type": strings.Replace(base, orders.RequestedType, "com.example.x", 1),
		"no source":    strings.Replace(base, `"source":"/shop",`, ``, 1),
		"empty id":     strings.Replace(base, `"id":"e1"`, `"id":""`, 1),
		"bad time":     base + `,"time":"yesterday"`,
		"base64 data":  strings.Replace(base, `"data":`+orderJSON, `"data_base64":"e30="`, 1),
		"XML":          base + `,"datacontenttype":"application/xml"`,
		"no tenant":    strings.Replace(base, `"tenant":"acme",`, ``, 1),
	}
	for name, body := range cloudEvents {
		ce := "{" + body + "}"
		_, codeErr := ordersOnly.Decode(structured(ce))
		if codeErr == nil || v.Validate(contracts.CloudEvent, []byte(ce)) == nil {
			t.Errorf("CloudEvent %s: code says %v; want both to refuse it", name, codeErr)
		}
	}
}

func TestContractCurrenciesAreTheCodes(t *testing.T) {
	raw, err := contractFile(contracts.Order)
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Currency struct{ Enum []string }
		}
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	got, want := slices.Sorted(slices.Values(schema.Properties.Currency.Enum)), slices.Sorted(slices.Values(orders.Currencies()))
	if !slices.Equal(got, want) {
		t.Fatalf("order.json's currencies %v, the code's %v", got, want)
	}
}

func contractFile(name string) ([]byte, error) {
	return fs.ReadFile(contracts.Files(), name)
}
