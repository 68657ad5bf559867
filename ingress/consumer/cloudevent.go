package consumer

import (
	"encoding/json"
	"mime"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orderflow/orderflow/tenants"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress"
)

// CloudEvents 1.0 on orders.requested, as its Kafka protocol binding maps them:
// binary mode carries the attributes in ce_* headers and the data in the value;
// structured mode carries the whole event as JSON, with the content-type header
// application/cloudevents+json. The data is the request, as in the envelope.
const (
	// TenantAttribute is the extension attribute that names the tenant
	// (ce_tenant in binary mode).
	TenantAttribute = "tenant"

	ceSpecVersion     = "1.0"
	ceStructured      = "application/cloudevents+json"
	headerContentType = "content-type"
	ceHeaderPrefix    = "ce_"
	// Bounds of the identity attributes: the spec sets none, the event log does.
	maxCloudEventID     = 255
	maxCloudEventSource = 1024
)

// CloudEvent is what identifies a CloudEvent: its source and id, and its type.
type CloudEvent struct {
	Source, ID, Type string
}

// Decode parses and validates a message of orders.requested: a CloudEvent in
// binary mode (a ce_specversion header), in structured mode (content-type
// application/cloudevents+json), or else the envelope. Every error is a
// *ingress.FieldError: the message is poison.
func (d *Decoder) Decode(m kafka.Message) (Event, error) {
	if _, ok := header(m.Headers, ceHeaderPrefix+"specversion"); ok {
		return d.decodeBinary(m)
	}
	if isStructured(m) {
		return d.decodeStructured(m.Value)
	}
	return d.DecodeEvent(m.Value)
}

// decodeBinary reads the attributes from the ce_* headers; the value is the data.
func (d *Decoder) decodeBinary(m kafka.Message) (Event, error) {
	attrs := map[string]string{}
	for _, h := range m.Headers {
		name, ok := strings.CutPrefix(h.Key, ceHeaderPrefix)
		if !ok {
			continue
		}
		if _, dup := attrs[name]; dup {
			return Event{}, &ingress.FieldError{Field: h.Key, Message: "appears more than once"}
		}
		if !utf8.Valid(h.Value) {
			return Event{}, &ingress.FieldError{Field: h.Key, Message: "not valid UTF-8"}
		}
		attrs[name] = string(h.Value)
	}
	if ct, ok := header(m.Headers, headerContentType); ok {
		attrs["datacontenttype"] = ct
	}
	return d.cloudEvent(attrs, m.Value, ceHeaderPrefix)
}

// decodeStructured reads the event from the value's JSON object. Extension
// attributes are allowed, as the spec says; data_base64 is not: the data is an
// order, JSON.
func (d *Decoder) decodeStructured(value []byte) (Event, error) {
	var members map[string]json.RawMessage
	if err := ingress.DecodeStrict(value, &members); err != nil {
		return Event{}, err
	}
	if members == nil {
		return Event{}, &ingress.FieldError{Field: "body", Message: "must be a JSON object"}
	}
	if _, ok := members["data_base64"]; ok {
		return Event{}, &ingress.FieldError{Field: "data_base64", Message: "not accepted: the data is a request, as JSON in data"}
	}
	attrs := map[string]string{}
	for _, name := range stringAttributes {
		raw, ok := members[name]
		if !ok || string(raw) == "null" { // null: absent, as the JSON format allows
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Event{}, &ingress.FieldError{Field: name, Message: "must be a string"}
		}
		attrs[name] = s
	}
	return d.cloudEvent(attrs, members["data"], "")
}

// stringAttributes are the attributes read, all strings; other extensions (of any
// JSON type) are ignored.
var stringAttributes = []string{"specversion", "id", "source", "type", TenantAttribute, "datacontenttype", "time"}

// cloudEvent validates the attributes and the data; prefix is how the attributes
// are named in errors (ce_ for headers).
func (d *Decoder) cloudEvent(attrs map[string]string, data []byte, prefix string) (Event, error) {
	bad := func(name, msg string) (Event, error) {
		return Event{}, &ingress.FieldError{Field: prefix + name, Message: msg}
	}
	switch v, ok := attrs["specversion"]; {
	case !ok:
		return bad("specversion", "is required")
	case v != ceSpecVersion:
		return bad("specversion", "must be "+ceSpecVersion)
	}
	id, source := attrs["id"], attrs["source"]
	switch {
	case id == "":
		return bad("id", "is required")
	case len(id) > maxCloudEventID:
		return bad("id", "longer than 255 bytes")
	case source == "":
		return bad("source", "is required")
	case len(source) > maxCloudEventSource:
		return bad("source", "longer than 1024 bytes")
	}
	if _, err := url.Parse(source); err != nil {
		return bad("source", "must be a URI-reference")
	}
	k := d.byType(attrs["type"])
	if k == nil {
		return bad("type", "must be "+d.types())
	}
	tenant := attrs[TenantAttribute]
	if !tenants.Valid(tenant) {
		return bad(TenantAttribute, "missing or not a tenant name")
	}
	if ct, ok := attrs["datacontenttype"]; ok && mediaType(ct) != "application/json" {
		return bad("datacontenttype", "must be application/json")
	}
	if t, ok := attrs["time"]; ok {
		if _, err := time.Parse(time.RFC3339Nano, t); err != nil {
			return bad("time", "must be an RFC 3339 timestamp")
		}
	}
	if len(data) == 0 || string(data) == "null" {
		return Event{}, &ingress.FieldError{Field: "data", Message: "is required: the " + k.Name()}
	}
	req, err := k.Decode(data)
	if err != nil {
		return Event{}, prefixed("data.", err)
	}
	return Event{Tenant: tenant, Kind: k, Request: req, CloudEvent: &CloudEvent{Source: source, ID: id, Type: attrs["type"]}}, nil
}

// types lists the CloudEvent types the decoder takes, for an error.
func (d *Decoder) types() string {
	ts := make([]string, len(d.kinds))
	for i, k := range d.kinds {
		ts[i] = k.Envelope().CloudEventType
	}
	return strings.Join(ts, " or ")
}

// isStructured reports a CloudEvent in structured mode: its content type says so.
func isStructured(m kafka.Message) bool {
	ct, ok := header(m.Headers, headerContentType)
	return ok && mediaType(ct) == ceStructured
}

// header is the value of the first header named key.
func header(hs []kafka.Header, key string) (string, bool) {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// mediaType is a content type without its parameters, lower-case; "" if malformed.
func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ""
	}
	return mt
}
