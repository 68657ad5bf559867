package contracts_test

import (
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/orderflow/orderflow/contracts"
	"github.com/orderflow/orderflow/customers/erasure"
)

// erasureSchema is the erasure's request on orders.requested.
const erasureSchema = "orders.requested/v1/erasure.json"

// erasureType is the CloudEvent type of an erasure (the root package's erasure kind).
const erasureType = "dev.orderflow.CustomerErasureRequested.v1"

// examples are a valid request of each schema an envelope member or a
// CloudEvent's data refers to; each is invalid under the others.
var examples = map[string]string{
	contracts.Order:  `{"customer_id":"cus_1","currency":"EUR","items":[{"sku":"s","quantity":1,"unit_amount":1}],"payment_method":"pm"}`,
	contracts.Refund: `{"order_id":"ord_1"}`,
	erasureSchema:    `{"customer_id":"cus_1"}`,
}

// The erasure's schema and its decoder (customers/erasure, the one the erasure
// kind decodes with) accept and refuse the same requests, alone, in the
// envelope and as a CloudEvent's data.
func TestErasureSchemaKeepsTheDecoder(t *testing.T) {
	v := validator(t)
	dec := erasure.NewDecoder([]byte("print key"))
	payloads := map[string]string{
		"valid":         `{"customer_id":"cus_1"}`,
		"128 long":      `{"customer_id":"` + strings.Repeat("c", 128) + `"}`,
		"visible ends":  `{"customer_id":"!~"}`,
		"129 long":      `{"customer_id":"` + strings.Repeat("c", 129) + `"}`,
		"empty":         `{"customer_id":""}`,
		"space":         `{"customer_id":"cus 1"}`,
		"not ASCII":     `{"customer_id":"cüs_1"}`,
		"control":       `{"customer_id":"cus\u00011"}`,
		"number":        `{"customer_id":7}`,
		"null":          `{"customer_id":null}`,
		"missing":       `{}`,
		"unknown field": `{"customer_id":"cus_1","note":"x"}`,
		"an array":      `["cus_1"]`,
		"a string":      `"cus_1"`,
		"name's case":   `{"Customer_ID":"cus_1"}`,
	}
	valid := map[string]bool{"valid": true, "128 long": true, "visible ends": true}
	// The code is lenient here (encoding/json matches member names without
	// regard to case); the contract asks the names as written.
	lenient := map[string]bool{"name's case": true}
	for name, p := range payloads {
		_, codeErr := dec.Decode([]byte(p))
		if (codeErr == nil) != (valid[name] || lenient[name]) {
			t.Errorf("erasure %s: code says %v; want valid %v", name, codeErr, valid[name] || lenient[name])
		}
		if schemaErr := v.Validate(erasureSchema, []byte(p)); (schemaErr == nil) != valid[name] {
			t.Errorf("erasure %s: schema says %v; want valid %v", name, schemaErr, valid[name])
		}
		envelope := `{"eventId":"e1","tenant":"acme","erasure":` + p + `}`
		if err := v.Validate(contracts.Envelope, []byte(envelope)); (err == nil) != valid[name] {
			t.Errorf("envelope with erasure %s: schema says %v; want valid %v", name, err, valid[name])
		}
		ce := `{"specversion":"1.0","id":"e1","source":"/crm","type":"` + erasureType + `","tenant":"acme","data":` + p + `}`
		if err := v.Validate(contracts.CloudEvent, []byte(ce)); (err == nil) != valid[name] {
			t.Errorf("CloudEvent with erasure %s: schema says %v; want valid %v", name, err, valid[name])
		}
	}
}

// An envelope carries exactly one request: every member of envelope.json has an
// example that is valid alone, and no two members are valid together.
func TestEnvelopeCarriesOneRequestOfEachMember(t *testing.T) {
	v := validator(t)
	members := envelopeMembers(t)
	if members["erasure"] != erasureSchema {
		t.Fatalf("envelope.json's members %v: want erasure, of %s", members, erasureSchema)
	}
	body := func(names ...string) string {
		b := `{"eventId":"e1","tenant":"acme"`
		for _, n := range names {
			b += fmt.Sprintf(`,%q:%s`, n, examples[members[n]])
		}
		return b + "}"
	}
	for name, schema := range members {
		if _, ok := examples[schema]; !ok {
			t.Fatalf("member %s (%s) has no example in this test", name, schema)
		}
		if err := v.Validate(contracts.Envelope, []byte(body(name))); err != nil {
			t.Errorf("an envelope of one %s: %v", name, err)
		}
		for other := range members {
			if other != name && v.Validate(contracts.Envelope, []byte(body(name, other))) == nil {
				t.Errorf("an envelope with %s and %s is valid", name, other)
			}
		}
	}
	if v.Validate(contracts.Envelope, []byte(body())) == nil {
		t.Error("an envelope with no request is valid")
	}
	// The members are exclusive by their presence: an erasure that looks like
	// nothing else is still refused in another member.
	if v.Validate(contracts.Envelope, []byte(`{"eventId":"e1","tenant":"acme","order":`+examples[erasureSchema]+`}`)) == nil {
		t.Error("an erasure in the order member is valid")
	}
}

// Every CloudEvent type cloudevent.json accepts has a binary message in the
// AsyncAPI document, with that ce_type, and its data is valid as that message's
// payload and as no other's.
func TestCloudEventTypesMapToTheirPayloads(t *testing.T) {
	v := validator(t)
	byType := binaryMessages(t)
	if byType[erasureType] != erasureSchema {
		t.Fatalf("asyncapi.yaml's binary messages %v: want %s of %s", byType, erasureType, erasureSchema)
	}
	types := cloudEventTypes(t)
	if got, want := slices.Sorted(slices.Values(types)), slices.Sorted(maps.Keys(byType)); !slices.Equal(got, want) {
		t.Fatalf("cloudevent.json's types %v, asyncapi.yaml's binary messages' %v", got, want)
	}
	for _, typ := range types {
		for schema, data := range examples {
			ce := `{"specversion":"1.0","id":"e1","source":"/crm","type":"` + typ + `","tenant":"acme","data":` + data + `}`
			err := v.Validate(contracts.CloudEvent, []byte(ce))
			if want := schema == byType[typ]; (err == nil) != want {
				t.Errorf("a CloudEvent of %s with data of %s: %v; want valid %v", typ, schema, err, want)
			}
		}
	}
}

// The erasure's message says what producers must know of its personal data:
// where its answer is read, and that Kafka keeps the customer's ID until the
// topic's retention.
func TestErasureMessageSaysWhatKafkaKeeps(t *testing.T) {
	msg := asyncAPI(t).Channels["ordersRequested"].Messages["erasureCloudEventBinary"]
	text := strings.Join(strings.Fields(msg.Summary+" "+msg.Description), " ")
	for _, want := range []string{"GET /v1/erasures/{id}", "receipt", "retention", "short", "customer's ID"} {
		if !strings.Contains(text, want) {
			t.Errorf("the erasure's message does not say %q: %q", want, text)
		}
	}
}

func validator(t *testing.T) *contracts.Validator {
	t.Helper()
	v, err := contracts.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// envelopeMembers are envelope.json's request members and the schema each refers to.
func envelopeMembers(t *testing.T) map[string]string {
	t.Helper()
	var doc struct {
		Properties map[string]struct {
			Ref string `json:"$ref"`
		} `json:"properties"`
	}
	read(t, contracts.Envelope, &doc)
	out := map[string]string{}
	for name, p := range doc.Properties {
		if p.Ref != "" {
			out[name] = "orders.requested/v1/" + p.Ref
		}
	}
	return out
}

// cloudEventTypes are the types cloudevent.json accepts.
func cloudEventTypes(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Properties struct {
			Type struct {
				Enum []string `json:"enum"`
			} `json:"type"`
		} `json:"properties"`
	}
	read(t, contracts.CloudEvent, &doc)
	return doc.Properties.Type.Enum
}

type apiMessage struct {
	Summary     string `json:"summary"`
	Description string `json:"description"`
	Headers     struct {
		Properties struct {
			CEType struct {
				Const string `json:"const"`
			} `json:"ce_type"`
		} `json:"properties"`
	} `json:"headers"`
	Payload struct {
		Ref string `json:"$ref"`
	} `json:"payload"`
}

type apiDoc struct {
	Channels map[string]struct {
		Messages map[string]apiMessage `json:"messages"`
	} `json:"channels"`
}

func asyncAPI(t *testing.T) apiDoc {
	t.Helper()
	var doc apiDoc
	read(t, "asyncapi.yaml", &doc)
	return doc
}

// binaryMessages are the requests topic's binary CloudEvent messages: their
// ce_type and their payload's schema.
func binaryMessages(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, m := range asyncAPI(t).Channels["ordersRequested"].Messages {
		typ := m.Headers.Properties.CEType.Const
		if typ == "" {
			continue
		}
		if _, dup := out[typ]; dup {
			t.Errorf("two messages of ce_type %s (one is %s)", typ, name)
		}
		out[typ] = m.Payload.Ref
	}
	return out
}

// read decodes a contract file, JSON or YAML.
func read(t *testing.T, name string, into any) {
	t.Helper()
	raw, err := fs.ReadFile(contracts.Files(), name)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
