package activities

import (
	"context"
	"encoding/json"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/contracts"
	"github.com/orderflow/orderflow/orders/order"
)

type capture struct{ msgs []kafka.Message }

func (c *capture) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	c.msgs = append(c.msgs, msgs...)
	return nil
}

// What each type carries, as the workflows publish it.
var published = map[string]Event{
	EventOrderPaid:              {Status: order.StatusPaid, PaymentRef: "pi_1"},
	EventOrderPaymentDeclined:   {Status: order.StatusPaymentDeclined, Reason: "card declined"},
	EventOrderCancelled:         {Status: order.StatusCancelled, PaymentRef: "pi_1", Reason: "cancelled after payment"},
	EventOrderFailed:            {Status: order.StatusFailed, PaymentRef: "pi_1", Reason: "after charge: stock"},
	EventOrderPartiallyRefunded: {Status: order.StatusPartiallyRefunded, PaymentRef: "pi_1", AmountRefunded: 200},
	EventOrderRefunded:          {Status: order.StatusRefunded, PaymentRef: "pi_1", AmountRefunded: 500},
	EventOrderDisputed:          {Status: order.StatusDisputed, PaymentRef: "pi_1"},
	EventOrderDisputeWon:        {Status: order.StatusPaid, PaymentRef: "pi_1"},
	EventOrderRefundReversed:    {Status: order.StatusPartiallyRefunded, PaymentRef: "pi_1", AmountRefunded: 200},
	EventRefundSucceeded:        {PaymentRef: "pi_1", RefundID: "rfd_abcdefghijklmnopqrstuvwxyz", RefundAmount: 200},
	EventRefundFailed:           {PaymentRef: "pi_1", RefundID: "rfd_abcdefghijklmnopqrstuvwxyz", RefundAmount: 900, Reason: "amount_exceeds_refundable: 300 left"},
}

func TestEveryEventMatchesItsContract(t *testing.T) {
	v, err := contracts.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	var schemas []string
	entries, err := fs.ReadDir(contracts.Files(), contracts.EventsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := strings.TrimSuffix(e.Name(), ".json"); name != "event" {
			schemas = append(schemas, name)
		}
	}
	if !sameSet(schemas, EventTypes()) {
		t.Fatalf("schemas %v, types %v: each type published needs its schema, and no other", schemas, EventTypes())
	}
	wf := order.WorkflowID("acme", order.FromHTTP, "k1")
	for _, typ := range EventTypes() {
		w := &capture{}
		e := published[typ]
		e.Type, e.OrderID, e.Tenant, e.WorkflowID, e.Amount, e.Currency = typ, order.IDFor(wf), "acme", wf, 500, "EUR"
		e.OccurredAt = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		if err := NewEvents(w, nil).Publish(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		m := w.msgs[0]
		if err := v.CheckEvent(m); err != nil {
			t.Errorf("%s: %v", typ, err)
		}
	}
	// A type's schema refuses another type's event and a field it does not know.
	w := &capture{}
	e := published[EventOrderPaid]
	e.Type, e.OrderID, e.Tenant, e.WorkflowID, e.Amount, e.Currency, e.OccurredAt = EventOrderPaid, order.IDFor(wf), "acme", wf, 500, "EUR", time.Now()
	_ = NewEvents(w, nil).Publish(context.Background(), e)
	if v.Validate(contracts.EventSchema(EventOrderRefunded), w.msgs[0].Value) == nil {
		t.Fatal("OrderRefunded's schema takes an OrderPaid event")
	}
	extra := strings.Replace(string(w.msgs[0].Value), `"type"`, `"kind":"x","type"`, 1)
	if v.Validate(contracts.EventSchema(EventOrderPaid), []byte(extra)) == nil {
		t.Fatal("the schema takes a field it does not declare")
	}
}

// TestEventFieldsAreTheSchemas fails when a field is added, renamed or dropped in
// code and not in event.json, or the other way round.
func TestEventFieldsAreTheSchemas(t *testing.T) {
	raw, err := fs.ReadFile(contracts.Files(), contracts.EventsDir+"/event.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]json.RawMessage
		Required   []string
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	var fields, required []string
	typ := reflect.TypeFor[Event]()
	for i := range typ.NumField() {
		name, opts, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		fields = append(fields, name)
		if opts != "omitempty" {
			required = append(required, name)
		}
	}
	var props []string
	for p := range schema.Properties {
		props = append(props, p)
	}
	if !sameSet(fields, props) {
		t.Fatalf("Event's fields %v, event.json's properties %v", fields, props)
	}
	if !sameSet(required, schema.Required) {
		t.Fatalf("fields always sent %v, event.json requires %v", required, schema.Required)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// A refund request's event carries no order status, and an order's event no
// refund request; a RefundFailed of an order that does not exist carries neither
// amount nor currency.
func TestRefundEventsAreNotOrderEvents(t *testing.T) {
	v, err := contracts.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	wf := order.WorkflowID("acme", order.FromHTTP, "k1")
	encode := func(e Event) []byte {
		w := &capture{}
		e.OrderID, e.Tenant, e.WorkflowID, e.OccurredAt = order.IDFor(wf), "acme", wf, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		if err := NewEvents(w, nil).Publish(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		return w.msgs[0].Value
	}
	for _, c := range []struct {
		e     Event
		valid bool
	}{
		{Event{Type: EventRefundFailed, RefundID: "rfd_abcdefghijklmnopqrstuvwxyz", Reason: "order_not_refundable: no such order"}, true},
		{Event{Type: EventRefundFailed, RefundID: "rfd_abcdefghijklmnopqrstuvwxyz", Reason: "x", Status: order.StatusPaid}, false},
		{Event{Type: EventRefundSucceeded, RefundID: "rfd_abcdefghijklmnopqrstuvwxyz", RefundAmount: 1, PaymentRef: "pi_1"}, false}, // no order amount
		{Event{Type: EventOrderPaid, Status: order.StatusPaid, Amount: 1, Currency: "EUR", PaymentRef: "pi_1", RefundID: "rfd_abcdefghijklmnopqrstuvwxyz"}, false},
		{Event{Type: EventOrderPaid, Status: order.StatusPaid, PaymentRef: "pi_1"}, false}, // no amount
	} {
		err := v.Validate(contracts.EventSchema(c.e.Type), encode(c.e))
		if (err == nil) != c.valid {
			t.Errorf("%+v: valid %v, want %v (%v)", c.e, err == nil, c.valid, err)
		}
	}
}
