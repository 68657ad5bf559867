// Package contracts holds the published schemas of orderflow's Kafka topics:
// what orders.requested accepts and what orders.events carries, as JSON Schema
// (draft 2020-12), versioned by directory, and the AsyncAPI document that names
// them. Validator checks a message against them.
package contracts

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/segmentio/kafka-go"
)

//go:embed orders.requested orders.events asyncapi.yaml
var files embed.FS

// Base is the URL the schemas' $ids start with; a file's $id is Base and its path.
const Base = "https://orderflow.dev/schemas/"

// Schema names, as paths under Base.
const (
	Order      = "orders.requested/v1/order.json"
	Refund     = "orders.requested/v1/refund.json"
	Erasure    = "orders.requested/v1/erasure.json"
	Envelope   = "orders.requested/v1/envelope.json"
	CloudEvent = "orders.requested/v1/cloudevent.json"
	// EventsDir holds one schema per outbound event type, named by the type.
	EventsDir = "orders.events/v1"
)

// EventSchema is the schema of one outbound event type.
func EventSchema(eventType string) string { return path.Join(EventsDir, eventType+".json") }

// Files returns the contract's files.
func Files() fs.FS { return files }

// Validator validates messages against the schemas, formats asserted.
type Validator struct {
	c       *jsonschema.Compiler
	schemas map[string]*jsonschema.Schema
}

// NewValidator compiles every schema in the contract.
func NewValidator() (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	var names []string
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		raw, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if id, _ := doc.(map[string]any)["$id"].(string); id != Base+p {
			return fmt.Errorf("%s: $id %q, want %q", p, id, Base+p)
		}
		names = append(names, p)
		return c.AddResource(Base+p, doc)
	})
	if err != nil {
		return nil, fmt.Errorf("load contracts: %w", err)
	}
	v := &Validator{c: c, schemas: map[string]*jsonschema.Schema{}}
	for _, p := range names {
		s, err := c.Compile(Base + p)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", p, err)
		}
		v.schemas[p] = s
	}
	return v, nil
}

// Names are the schemas the validator holds.
func (v *Validator) Names() []string {
	out := make([]string, 0, len(v.schemas))
	for n := range v.schemas {
		out = append(out, n)
	}
	return out
}

// Validate checks value, JSON, against the named schema.
func (v *Validator) Validate(name string, value []byte) error {
	s, ok := v.schemas[name]
	if !ok {
		return fmt.Errorf("no schema %s in the contract", name)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return fmt.Errorf("%s: not JSON: %w", name, err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// CheckEvent checks a message of orders.events: its value against its type's
// schema, and its CloudEvents headers (binary mode) against its value.
func (v *Validator) CheckEvent(m kafka.Message) error {
	var e struct {
		EventID    string `json:"eventId"`
		Type       string `json:"type"`
		OrderID    string `json:"orderId"`
		Tenant     string `json:"tenant"`
		OccurredAt string `json:"occurredAt"`
	}
	if err := json.Unmarshal(m.Value, &e); err != nil {
		return fmt.Errorf("event at offset %d: %w", m.Offset, err)
	}
	if err := v.Validate(EventSchema(e.Type), m.Value); err != nil {
		return err
	}
	want := map[string]string{
		"eventId": e.EventID, "type": e.Type, "content-type": "application/json",
		"ce_specversion": "1.0", "ce_id": e.EventID, "ce_source": "/orderflow/orders",
		"ce_type": "dev.orderflow." + e.Type + ".v1", "ce_subject": e.OrderID, "ce_tenant": e.Tenant,
		"ce_dataschema": Base + EventSchema(e.Type),
	}
	got := map[string]string{}
	for _, h := range m.Headers {
		if _, dup := got[h.Key]; dup {
			return fmt.Errorf("%s %s: header %s twice", e.Type, e.EventID, h.Key)
		}
		got[h.Key] = string(h.Value)
	}
	for k, w := range want {
		if got[k] != w {
			return fmt.Errorf("%s %s: header %s = %q, want %q", e.Type, e.EventID, k, got[k], w)
		}
	}
	at, err := time.Parse(time.RFC3339Nano, got["ce_time"])
	if occurred, err2 := time.Parse(time.RFC3339Nano, e.OccurredAt); err != nil || err2 != nil || !at.Equal(occurred) {
		return fmt.Errorf("%s %s: ce_time %q, occurredAt %q", e.Type, e.EventID, got["ce_time"], e.OccurredAt)
	}
	return nil
}
