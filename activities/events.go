package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/platform/tracing"
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
)

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

// Event is an order event. EventID is derived from the workflow ID and the type, so
// a retried publish carries the same ID and consumers can drop the duplicate.
type Event struct {
	EventID    string       `json:"eventId"`
	Type       string       `json:"type"`
	OrderID    string       `json:"orderId"`
	Tenant     string       `json:"tenant"`
	WorkflowID string       `json:"workflowId"`
	Status     order.Status `json:"status"`
	Amount     int64        `json:"amount"`
	Currency   string       `json:"currency"`
	PaymentRef string       `json:"paymentRef,omitempty"`
	Reason     string       `json:"reason,omitempty"`
	// AmountRefunded is what others refunded (OrderPartiallyRefunded,
	// OrderRefunded); each amount is an event of its own.
	AmountRefunded int64     `json:"amountRefunded,omitempty"`
	OccurredAt     time.Time `json:"occurredAt"`
}

// Publish writes the event keyed by order ID, so one order's events stay in order.
func (a *Events) Publish(ctx context.Context, e Event) error {
	e.EventID = order.EventID(e.WorkflowID, e.Type)
	if e.AmountRefunded > 0 && e.Type == EventOrderPartiallyRefunded {
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
