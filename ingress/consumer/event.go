// Package consumer turns events of the orders.requested topic into idempotent
// workflow starts. Offsets are committed only after the starts they trigger are
// acknowledged, as the contiguous per-partition watermark; poison messages go to a
// dead-letter topic; redeliveries are absorbed by processed_events and the workflow
// ID.
package consumer

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/internal/order"
)

// Event is a message of orders.requested: an envelope, with its EventID, or a
// CloudEvent.
type Event struct {
	EventID    string
	CloudEvent *CloudEvent
	Tenant     string
	Order      intake.Request
}

// String names the event in logs and errors, by its identity.
func (e Event) String() string {
	if e.CloudEvent != nil {
		return "CloudEvent " + strconv.Quote(e.CloudEvent.ID) + " of source " + strconv.Quote(e.CloudEvent.Source)
	}
	return "eventId " + strconv.Quote(e.EventID)
}

// DecodeEvent parses and validates an envelope strictly. Every error is a *intake.FieldError
// naming what is wrong: the message is poison and retrying cannot fix it.
func DecodeEvent(value []byte) (Event, error) {
	var raw struct {
		EventID string          `json:"eventId"`
		Tenant  string          `json:"tenant"`
		Order   json.RawMessage `json:"order"`
	}
	if err := intake.DecodeStrict(value, &raw); err != nil {
		return Event{}, err
	}
	if err := checkEventID(raw.EventID); err != nil {
		return Event{}, err
	}
	if !order.ValidTenant(raw.Tenant) {
		return Event{}, &intake.FieldError{Field: "tenant", Message: "missing or not a tenant name"}
	}
	if len(raw.Order) == 0 || string(raw.Order) == "null" {
		return Event{}, &intake.FieldError{Field: "order", Message: "is required"}
	}
	req, err := intake.DecodeRequest(raw.Order)
	if err != nil {
		var fe *intake.FieldError
		if errors.As(err, &fe) {
			return Event{}, &intake.FieldError{Field: "order." + fe.Field, Message: fe.Message}
		}
		return Event{}, err
	}
	return Event{EventID: raw.EventID, Tenant: raw.Tenant, Order: req}, nil
}

func checkEventID(id string) error {
	if msg := order.CheckKey(id); msg != "" {
		return &intake.FieldError{Field: "eventId", Message: msg}
	}
	return nil
}
