package shipment

import (
	"net/http"
	"time"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow"
	"github.com/orderflow/orderflow/ingress"
)

// Kind is the shipment kind as orderflow runs it: at /v1/shipments, as the
// "shipment" member of an event or a com.example.ShipmentRequested.v1
// CloudEvent, recorded in kind_records.
type Kind struct{}

var _ orderflow.Kind = Kind{}

// Route is the kind's path under /v1.
func (Kind) Route() string { return "shipments" }

// Ingress is the kind as the ingresses start it: everything but what Spec says
// is orderflow's.
func (Kind) Ingress(p orderflow.Platform) (ingress.Kind, error) {
	return orderflow.NewRecorded(orderflow.Spec[Input]{
		Name:     KindName,
		Prefix:   "shp_",
		Envelope: ingress.Envelope{Field: "shipment", CloudEventType: "com.example.ShipmentRequested.v1"},
		Decode:   Decode,
		Workflow: Workflow,
		Input: func(tenant, workflowID, id string, req ingress.Request) Input {
			return Input{Shipment: Shipment{Request: req.(Request), ID: id, Tenant: tenant, WorkflowID: workflowID}}
		},
		Fingerprint: func(in Input) []byte { return in.Shipment.Fingerprint() },
		Record: func(tenant, workflowID, id string, req ingress.Request) (string, []byte) {
			s := Shipment{Request: req.(Request), ID: id, Tenant: tenant, WorkflowID: workflowID}
			return StatusPending, s.Record().Body
		},
	}, p)
}

// Workflows registers the shipment workflow.
func (Kind) Workflows(r sdkworker.WorkflowRegistry) { r.RegisterWorkflow(Workflow) }

// Activities book with the carrier at CARRIER_URL.
func (Kind) Activities(p orderflow.Platform) ([]any, error) {
	url := p.Getenv("CARRIER_URL")
	if url == "" {
		url = "http://127.0.0.1:8097"
	}
	return []any{NewActivities(url, &http.Client{Timeout: 8 * time.Second}, p.Records)}, nil
}
