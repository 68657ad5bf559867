package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/tracing"
)

// Event types published to orders.events.
const (
	EventOrderPaid            = "OrderPaid"
	EventOrderPaymentDeclined = "OrderPaymentDeclined"
	EventOrderCancelled       = "OrderCancelled"
	EventOrderFailed          = "OrderFailed"
	// After the payment, what others did to it at the provider.
	EventOrderPartiallyRefunded = "OrderPartiallyRefunded"
	EventOrderRefunded          = "OrderRefunded"
	EventOrderDisputed          = "OrderDisputed"
	EventOrderDisputeWon        = "OrderDisputeWon"
	// EventOrderRefundReversed: a refund the provider failed after it succeeded
	// gave its share back; the order is PAID or PARTIALLY_REFUNDED again.
	EventOrderRefundReversed = "OrderRefundReversed"
	// A refund request's end: refunded, or refused for good.
	EventRefundSucceeded = "RefundSucceeded"
	EventRefundFailed    = "RefundFailed"
)

// EventTypes are every type published, each with its schema in
// contracts/orders.events/v1.
func EventTypes() []string {
	return []string{EventOrderPaid, EventOrderPaymentDeclined, EventOrderCancelled, EventOrderFailed,
		EventOrderPartiallyRefunded, EventOrderRefunded, EventOrderDisputed, EventOrderDisputeWon,
		EventOrderRefundReversed, EventRefundSucceeded, EventRefundFailed}
}

// CloudEvents attributes of every event, in binary mode (Kafka protocol binding):
// ce_id is the event's eventId, so source + id identify it as eventId does.
const (
	EventSource = "/orderflow/orders"
	// EventSchemaBase is where each type's schema is published: the type and
	// ".json" follow it, as in contracts/orders.events/v1/.
	EventSchemaBase = "https://orderflow.dev/schemas/orders.events/v1/"
)

// CloudEventType is the ce_type of an event type: versioned with its schema.
func CloudEventType(eventType string) string { return "dev.orderflow." + eventType + ".v1" }

// MessageWriter is the part of *kafka.Writer the publisher uses.
type MessageWriter interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

var _ MessageWriter = (*kafka.Writer)(nil)

// Events publishes order events.
type Events struct {
	w MessageWriter
	t *tracing.Tracing
}

// NewEvents returns the publishing activities; t (nil for none) traces each publish
// and hands its trace context to consumers in the message headers.
func NewEvents(w MessageWriter, t *tracing.Tracing) *Events {
	return &Events{w: w, t: t}
}

// Event is an event of an order: its own (Order...), or of one of its refund
// requests (Refund..., RefundID set, WorkflowID the refund's). EventID is derived
// from the workflow ID and the type, so a retried publish carries the same ID and
// consumers can drop the duplicate.
type Event struct {
	EventID    string `json:"eventId"`
	Type       string `json:"type"`
	OrderID    string `json:"orderId"`
	Tenant     string `json:"tenant"`
	WorkflowID string `json:"workflowId"`
	// Status is the order's (every Order... event); a refund's event has none.
	Status order.Status `json:"status,omitempty"`
	// Amount and Currency are the order's (every Order... event, and a refund's
	// when its order exists).
	Amount     int64  `json:"amount,omitempty"`
	Currency   string `json:"currency,omitempty"`
	PaymentRef string `json:"paymentRef,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// AmountRefunded is what was refunded at the provider in all
	// (OrderPartiallyRefunded, OrderRefunded); each amount is an event of its own.
	AmountRefunded int64 `json:"amountRefunded,omitempty"`
	// RefundID is the refund request's (rfd_...), RefundAmount what it refunded
	// (RefundSucceeded) or asked for (RefundFailed; none for all that was left).
	RefundID     string    `json:"refundId,omitempty"`
	RefundAmount int64     `json:"refundAmount,omitempty"`
	OccurredAt   time.Time `json:"occurredAt"`
}

// Publish writes the event keyed by order ID, so one order's events stay in order.
func (a *Events) Publish(ctx context.Context, e Event) error {
	e.EventID = order.EventID(e.WorkflowID, e.Type)
	if e.Type == EventOrderPartiallyRefunded && e.AmountRefunded > 0 || e.Type == EventOrderRefundReversed {
		e.EventID = order.EventID(e.WorkflowID, e.Type+":"+strconv.FormatInt(e.AmountRefunded, 10))
	}
	value, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode %s: %w", e.Type, err)
	}
	stop := Heartbeat(ctx)
	defer stop()
	headers := []kafka.Header{
		{Key: "eventId", Value: []byte(e.EventID)},
		{Key: "type", Value: []byte(e.Type)},
		{Key: "content-type", Value: []byte("application/json")},
		{Key: "ce_specversion", Value: []byte("1.0")},
		{Key: "ce_id", Value: []byte(e.EventID)},
		{Key: "ce_source", Value: []byte(EventSource)},
		{Key: "ce_type", Value: []byte(CloudEventType(e.Type))},
		{Key: "ce_subject", Value: []byte(e.OrderID)},
		{Key: "ce_time", Value: []byte(e.OccurredAt.UTC().Format(time.RFC3339Nano))},
		{Key: "ce_dataschema", Value: []byte(EventSchemaBase + e.Type + ".json")},
		{Key: "ce_tenant", Value: []byte(e.Tenant)},
	}
	if a.t != nil {
		var span trace.Span
		ctx, span = a.t.Tracer().Start(ctx, "publish "+e.Type, trace.WithSpanKind(trace.SpanKindProducer))
		defer span.End()
		headers = a.t.Inject(ctx, headers)
	}
	err = a.w.WriteMessages(ctx, kafka.Message{Key: []byte(e.OrderID), Value: value, Headers: headers})
	if err != nil {
		return fmt.Errorf("publish %s %s: %w", e.Type, e.EventID, err)
	}
	return nil
}
