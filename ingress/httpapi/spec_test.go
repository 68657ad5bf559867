package httpapi

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/platform/identity"
)

// The spec states the limits the server enforces, no looser and no stricter.
func TestSpecLimitsMatchTheServer(t *testing.T) {
	var spec struct {
		Components struct {
			Parameters map[string]struct {
				Schema struct {
					MaxLength int    `json:"maxLength"`
					Pattern   string `json:"pattern"`
				} `json:"schema"`
			} `json:"parameters"`
			Schemas map[string]struct {
				MaxLength  int `json:"maxLength"`
				Properties map[string]struct {
					MaxLength int `json:"maxLength"`
					MaxItems  int `json:"maxItems"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := yaml.Unmarshal(openapiSpec, &spec); err != nil {
		t.Fatal(err)
	}
	c := spec.Components
	req := c.Schemas["OrderRequest"].Properties
	for _, row := range []struct {
		what      string
		spec, got int
	}{
		{"Idempotency-Key maxLength", c.Parameters["IdempotencyKey"].Schema.MaxLength, identity.MaxKeyLen},
		{"path and query parameters' maxLength", c.Schemas["Param"].MaxLength, maxParamLen},
		{"items maxItems", req["items"].MaxItems, orders.MaxItems},
		{"customer_id maxLength", req["customer_id"].MaxLength, orders.MaxIDLen},
		{"payment_method maxLength", req["payment_method"].MaxLength, orders.MaxIDLen},
		{"sku maxLength", c.Schemas["Item"].Properties["sku"].MaxLength, orders.MaxIDLen},
	} {
		if row.spec != row.got {
			t.Errorf("%s: the spec says %d, the server takes %d", row.what, row.spec, row.got)
		}
	}
	if p := c.Parameters["IdempotencyKey"].Schema.Pattern; p != "^[!-~]{1,255}$" {
		t.Errorf("Idempotency-Key pattern %q", p)
	}
}
