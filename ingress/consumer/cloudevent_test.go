package consumer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/orders"
)

func binary(value string, attrs ...string) kafka.Message {
	m := kafka.Message{Value: []byte(value)}
	for i := 0; i+1 < len(attrs); i += 2 {
		m.Headers = append(m.Headers, kafka.Header{Key: attrs[i], Value: []byte(attrs[i+1])})
	}
	return m
}

func structured(value string) kafka.Message {
	return binary(value, "content-type", "application/cloudevents+json; charset=utf-8")
}

func TestDecodeCloudEvents(t *testing.T) {
	ce := func(extra ...string) []string {
		return append([]string{"ce_specversion", "1.0", "ce_id", "e1", "ce_source", "/shop/checkout", "ce_type", orders.RequestedType, "ce_tenant", "acme"}, extra...)
	}
	without := func(name string) []string {
		var out []string
		attrs := ce()
		for i := 0; i < len(attrs); i += 2 {
			if attrs[i] != name {
				out = append(out, attrs[i], attrs[i+1])
			}
		}
		return out
	}
	envelope := `{"specversion":"1.0","id":"e1","source":"/shop/checkout","type":"` + orders.RequestedType + `","tenant":"acme"`
	tests := []struct {
		name  string
		m     kafka.Message
		field string
	}{
		{"binary", binary(orderJSON, ce("content-type", "application/json", "ce_time", "2026-12-01T10:00:00Z", "ce_partitionkey", "x")...), ""},
		{"binary, no content type", binary(orderJSON, ce()...), ""},
		{"structured", structured(envelope + `,"datacontenttype":"application/json","sequence":7,"data":` + orderJSON + `}`), ""},
		{"binary, old spec", binary(orderJSON, append(without("ce_specversion"), "ce_specversion", "0.3")...), "ce_specversion"},
		{"binary, no id", binary(orderJSON, without("ce_id")...), "ce_id"},
		{"binary, no source", binary(orderJSON, without("ce_source")...), "ce_source"},
		{"binary, another type", binary(orderJSON, append(without("ce_type"), "ce_type", "com.example.thing")...), "ce_type"},
		{"binary, no tenant", binary(orderJSON, without("ce_tenant")...), "ce_tenant"},
		{"binary, id twice", binary(orderJSON, ce("ce_id", "e2")...), "ce_id"},
		{"binary, XML", binary(orderJSON, ce("content-type", "application/xml")...), "ce_datacontenttype"},
		{"binary, bad time", binary(orderJSON, ce("ce_time", "yesterday")...), "ce_time"},
		{"binary, id too long", binary(orderJSON, append(without("ce_id"), "ce_id", strings.Repeat("x", 256))...), "ce_id"},
		{"binary, invalid order", binary(strings.Replace(orderJSON, `"quantity":1`, `"quantity":0`, 1), ce()...), "data.items[0].quantity"},
		{"binary, no data", binary("", ce()...), "data"},
		{"structured, no data", structured(envelope + `}`), "data"},
		{"structured, base64 data", structured(envelope + `,"data_base64":"e30="}`), "data_base64"},
		{"structured, id a number", structured(strings.Replace(envelope, `"id":"e1"`, `"id":1`, 1) + `,"data":` + orderJSON + `}`), "id"},
		{"structured, unknown order field", structured(envelope + `,"data":` + strings.Replace(orderJSON, `{`, `{"x":1,`, 1) + `}`), "data.x"},
		{"structured, not an object", structured(`[1]`), "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := ordersOnly.Decode(tt.m)
			if tt.field == "" {
				if err != nil || ev.CloudEvent == nil || ev.CloudEvent.ID != "e1" || ev.CloudEvent.Source != "/shop/checkout" ||
					ev.Tenant != "acme" || ev.Request.(orders.Request).CustomerID != "cus_1" || ev.EventID != "" {
					t.Fatalf("Decode = %+v, %v", ev, err)
				}
				return
			}
			var fe *ingress.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("err = %v, want a FieldError on %q", err, tt.field)
			}
		})
	}
	// Without CloudEvents headers, a message is the envelope.
	if ev, err := ordersOnly.Decode(binary(`{"eventId":"e1","tenant":"acme","order":` + orderJSON + `}`)); err != nil || ev.CloudEvent != nil || ev.EventID != "e1" {
		t.Fatalf("envelope = %+v, %v", ev, err)
	}
}

func TestDeadLetterOfAStructuredCloudEventNamesIt(t *testing.T) {
	m := structured(`{"specversion":"1.0","id":"e1","source":"/shop","type":"x","data":{}}`)
	dl, err := deadLetterOf(m, errors.New("bad"), "g", time.Now(), maxDeadLetterBytes, testCodec(t))
	if err != nil {
		t.Fatal(err)
	}
	if headerOf(dl, "dlq.ce_id") != "e1" || headerOf(dl, "dlq.ce_source") != "/shop" || headerOf(dl, "dlq.ce_type") != "x" {
		t.Fatalf("headers %v: want the CloudEvent's identity", dl.Headers)
	}
	out, _, _, err := original(dl, testCodec(t))
	if err != nil || len(out.Headers) != 1 || string(out.Value) != string(m.Value) {
		t.Fatalf("original = %+v, %v: want the message as it came", out, err)
	}
}
