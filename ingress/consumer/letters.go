package consumer

import (
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress"
)

// Identity is whom a dead letter speaks for, read leniently from the message it
// was made from (a poison message may lack any of it), and the letter's own ID.
// Tenants reuse eventIds, and kinds too: an eventId alone names no letter.
type Identity struct {
	ID      string `json:"id"` // the letter's ID: its content and provenance (letterOf), in hex
	Tenant  string `json:"tenant"`
	Kind    string `json:"kind"`     // the kind's name; "" when the message names no kind the reader knows
	EventID string `json:"event_id"` // an envelope's eventId, or a CloudEvent's id
	Source  string `json:"source"`   // a CloudEvent's source; "" for an envelope
}

func (id Identity) String() string {
	s := fmt.Sprintf("tenant %q, kind %q, eventId %q", id.Tenant, id.Kind, id.EventID)
	if id.Source != "" {
		s += fmt.Sprintf(", source %q", id.Source)
	}
	return s + ", letter " + id.ID
}

// KindNames tells which kind a message carries: a plain event by its member
// (Envelope.Field), a CloudEvent by its type.
type KindNames struct{ byField, byType map[string]string }

// NamesOf reads the names and envelopes of kinds; nothing else of them is used.
func NamesOf(kinds ...ingress.Kind) KindNames {
	n := KindNames{byField: map[string]string{}, byType: map[string]string{}}
	for _, k := range kinds {
		n.byField[k.Envelope().Field] = k.Name()
		n.byType[k.Envelope().CloudEventType] = k.Name()
	}
	return n
}

// Selector picks dead letters: by the letter's ID, or by tenant, kind and
// eventId together (a CloudEvent's id, with its source).
type Selector struct {
	ID                            string
	Tenant, Kind, EventID, Source string
}

// Check reports a selector that names no letter: an ID, or a tenant, a kind and
// an eventId, are needed.
func (s Selector) Check() error {
	switch {
	case s.ID != "" && s.Tenant+s.Kind+s.EventID+s.Source != "":
		return fmt.Errorf("a letter is selected by its ID or by tenant, kind and eventId, not both")
	case s.ID == "" && (s.Tenant == "" || s.Kind == "" || s.EventID == ""):
		return fmt.Errorf("a letter is selected by its ID, or by tenant, kind and eventId together")
	}
	return nil
}

// Matches reports whether the letter id is one s selects. A CloudEvent's
// identity is its source and id: its source must match too.
func (s Selector) Matches(id Identity) bool {
	if s.ID != "" {
		return s.ID == id.ID
	}
	return s.Tenant != "" && s.Kind != "" && s.EventID != "" &&
		s.Tenant == id.Tenant && s.Kind == id.Kind && s.EventID == id.EventID && s.Source == id.Source
}

// selected reports whether any of sel picks id; every letter when sel is empty.
func selected(sel []Selector, id Identity) bool {
	if len(sel) == 0 {
		return true
	}
	for _, s := range sel {
		if s.Matches(id) {
			return true
		}
	}
	return false
}

// Identify is Describe with the letter's identity, read from its value opened
// with keys.
func Identify(m kafka.Message, keys Sealer, kinds KindNames) (LetterInfo, error) {
	out, _, _, err := original(m, keys)
	if err != nil {
		return LetterInfo{}, fmt.Errorf("open %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
	}
	li := Describe(m)
	li.Identity = identityOf(m, out, kinds)
	return li, nil
}

// identityOf reads the identity of the dead letter dl, made from out: a binary
// CloudEvent's ce_* headers, a structured one's attributes (the dlq.ce_*
// headers when its value was cut), or an envelope's eventId, tenant and member.
func identityOf(dl, out kafka.Message, kinds KindNames) Identity {
	id := Identity{ID: hex.EncodeToString(letterOf(dl, out.Value))}
	if _, ok := header(out.Headers, ceHeaderPrefix+"specversion"); ok {
		id.EventID, _ = header(out.Headers, ceHeaderPrefix+"id")
		id.Source, _ = header(out.Headers, ceHeaderPrefix+"source")
		id.Tenant, _ = header(out.Headers, ceHeaderPrefix+TenantAttribute)
		t, _ := header(out.Headers, ceHeaderPrefix+"type")
		id.Kind = kinds.byType[t]
		return id
	}
	var members map[string]json.RawMessage
	_ = json.Unmarshal(out.Value, &members) // a poison value may be anything
	text := func(name string) string {
		var s string
		_ = json.Unmarshal(members[name], &s)
		return s
	}
	if _, kept := header(dl.Headers, "dlq.ce_id"); isStructured(out) || kept { // kept: a cut letter lost its content-type
		id.EventID, id.Source, id.Tenant = text("id"), text("source"), text(TenantAttribute)
		t := text("type")
		if members == nil {
			id.EventID, _ = header(dl.Headers, "dlq.ce_id")
			id.Source, _ = header(dl.Headers, "dlq.ce_source")
			id.Tenant, _ = header(dl.Headers, "dlq.ce_"+TenantAttribute)
			t, _ = header(dl.Headers, "dlq.ce_type")
		}
		id.Kind = kinds.byType[t]
		return id
	}
	id.EventID, id.Tenant = text("eventId"), text("tenant")
	for field, name := range kinds.byField {
		if v, ok := members[field]; ok && string(v) != "null" {
			if id.Kind != "" {
				id.Kind = "" // two kinds' members: no kind of its own
				break
			}
			id.Kind = name
		}
	}
	return id
}
