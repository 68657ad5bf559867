// Package consumer turns events of the orders.requested topic into idempotent
// workflow starts. Offsets are committed only after the starts they trigger are
// acknowledged, as the contiguous per-partition watermark; poison messages go to a
// dead-letter topic; redeliveries are absorbed by processed_events and the workflow
// ID.
package consumer

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"

	"github.com/orderflow/orderflow/tenants"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/platform/identity"
)

// Event is a message of orders.requested: an envelope, with its EventID, or a
// CloudEvent, carrying a request of one kind.
type Event struct {
	EventID    string
	CloudEvent *CloudEvent
	Tenant     string
	Kind       ingress.Kind
	Request    ingress.Request
}

// String names the event in logs and errors, by its identity.
func (e Event) String() string {
	if e.CloudEvent != nil {
		return "CloudEvent " + strconv.Quote(e.CloudEvent.ID) + " of source " + strconv.Quote(e.CloudEvent.Source)
	}
	return "eventId " + strconv.Quote(e.EventID)
}

// Decoder reads the messages of orders.requested for the kinds it knows.
type Decoder struct {
	kinds []ingress.Kind
}

// NewDecoder decodes requests of kinds, told apart by their envelopes.
func NewDecoder(kinds ...ingress.Kind) *Decoder { return &Decoder{kinds: kinds} }

// DecodeEvent parses and validates an envelope strictly: eventId, tenant and
// exactly one member naming a kind. Every error is a *ingress.FieldError naming what
// is wrong: the message is poison and retrying cannot fix it.
func (d *Decoder) DecodeEvent(value []byte) (Event, error) {
	var raw map[string]json.RawMessage
	if err := ingress.DecodeStrict(value, &raw); err != nil {
		return Event{}, err
	}
	if raw == nil {
		return Event{}, &ingress.FieldError{Field: "body", Message: "must be a JSON object"}
	}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		if name != "eventId" && name != "tenant" && d.byField(name) == nil {
			return Event{}, &ingress.FieldError{Field: name, Message: "unknown field"}
		}
	}
	var ev Event
	if err := unmarshalString("eventId", raw["eventId"], &ev.EventID); err != nil {
		return Event{}, err
	}
	if err := unmarshalString("tenant", raw["tenant"], &ev.Tenant); err != nil {
		return Event{}, err
	}
	for _, k := range d.kinds {
		if v, ok := raw[k.Envelope().Field]; ok {
			if err := d.member(k, v, &ev); err != nil {
				return Event{}, err
			}
		}
	}
	if err := checkEventID(ev.EventID); err != nil {
		return Event{}, err
	}
	if !tenants.Valid(ev.Tenant) {
		return Event{}, &ingress.FieldError{Field: "tenant", Message: "missing or not a tenant name"}
	}
	if ev.Kind == nil {
		return Event{}, &ingress.FieldError{Field: d.kinds[0].Envelope().Field, Message: "is required"}
	}
	return ev, nil
}

// member decodes the member that carries a kind's request.
func (d *Decoder) member(k ingress.Kind, v json.RawMessage, ev *Event) error {
	name := k.Envelope().Field
	switch {
	case string(v) == "null":
		return nil // absent, as before kinds
	case ev.Kind != nil:
		return &ingress.FieldError{Field: name, Message: "an event carries one request: " + ev.Kind.Envelope().Field + " is there already"}
	}
	req, err := k.Decode(v)
	if err != nil {
		return prefixed(name+".", err)
	}
	ev.Kind, ev.Request = k, req
	return nil
}

func (d *Decoder) byField(name string) ingress.Kind {
	for _, k := range d.kinds {
		if k.Envelope().Field == name {
			return k
		}
	}
	return nil
}

func (d *Decoder) byType(ceType string) ingress.Kind {
	for _, k := range d.kinds {
		if k.Envelope().CloudEventType == ceType {
			return k
		}
	}
	return nil
}

// prefixed names a field error's field within where.
func prefixed(where string, err error) error {
	var fe *ingress.FieldError
	if errors.As(err, &fe) {
		return &ingress.FieldError{Field: where + fe.Field, Message: fe.Message}
	}
	return err
}

func unmarshalString(name string, v json.RawMessage, into *string) error {
	if v == nil || string(v) == "null" {
		return nil
	}
	if err := json.Unmarshal(v, into); err != nil {
		return &ingress.FieldError{Field: name, Message: "must be a string"}
	}
	return nil
}

func checkEventID(id string) error {
	if msg := identity.CheckKey(id); msg != "" {
		return &ingress.FieldError{Field: "eventId", Message: msg}
	}
	return nil
}
