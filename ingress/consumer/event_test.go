package consumer

import (
	"errors"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/orders"
)

const orderJSON = `{"customer_id":"cus_1","currency":"USD","items":[{"sku":"a","quantity":1,"unit_amount":100}],"payment_method":"pm_card_visa"}`

func TestDecodeEvent(t *testing.T) {
	tests := []struct {
		name, value, field string
	}{
		{"valid", `{"eventId":"e1","tenant":"acme","order":` + orderJSON + `}`, ""},
		{"not JSON", `hello`, "body"},
		{"no eventId", `{"tenant":"acme","order":` + orderJSON + `}`, "eventId"},
		{"bad tenant", `{"eventId":"e1","tenant":"Acme:1","order":` + orderJSON + `}`, "tenant"},
		{"no order", `{"eventId":"e1","tenant":"acme"}`, "order"},
		{"invalid order", `{"eventId":"e1","tenant":"acme","order":` + strings.Replace(orderJSON, `"quantity":1`, `"quantity":-1`, 1) + `}`, "order.items[0].quantity"},
		{"unknown field", `{"eventId":"e1","tenant":"acme","order":` + orderJSON + `,"x":1}`, "x"},
		{"eventId with space", `{"eventId":"e 1","tenant":"acme","order":` + orderJSON + `}`, "eventId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := ordersOnly.DecodeEvent([]byte(tt.value))
			if tt.field == "" {
				if err != nil || ev.EventID != "e1" || ev.Tenant != "acme" || ev.Request.(orders.Request).CustomerID != "cus_1" {
					t.Fatalf("DecodeEvent = %+v, %v", ev, err)
				}
				return
			}
			var fe *ingress.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("err = %v, want a FieldError on %q", err, tt.field)
			}
		})
	}
}

func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{`{"eventId":"e1","tenant":"acme","order":` + orderJSON + `}`, `{}`, `null`, `{"order":null}`, "\x00", `{"eventId":"` + strings.Repeat("x", 300) + `"}`,
		`{"eventId":"e\u0000","tenant":"acme","order":` + orderJSON + `}`, `{"eventId":"e1","tenant":"ac\u0000me","order":` + orderJSON + `}`,
		"{\"eventId\":\"e\xff\",\"tenant\":\"acme\",\"order\":" + orderJSON + "}", `{"eventId":"e1","tenant":"acme","order":` + strings.Replace(orderJSON, "cus_1", `cus\u0000`, 1) + `}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		ev, err := ordersOnly.DecodeEvent(value)
		if err != nil {
			var fe *ingress.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a FieldError: %v", err)
			}
			return
		}
		req := ev.Request.(orders.Request)
		if checkEventID(ev.EventID) != nil || ev.Tenant == "" || req.Validate() != nil {
			t.Fatalf("accepted an invalid event: %+v", ev)
		}
	})
}
