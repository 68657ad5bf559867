package orderflow

import (
	"encoding/json"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow/customers/erasure"
	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/platform/personal"
)

// erasures is the erasure of a customer, a kind like a team's: POST
// /v1/erasures {"customer_id"} or DELETE /v1/customers/{id} (the route
// httpapi mounts for it), or an "erasure" member on the requests topic; GET
// /v1/erasures/{id} reads its receipt. Every binary serves it.
type erasures struct{}

// Route is the kind's path under /v1.
func (erasures) Route() string { return "erasures" }

// Ingress is the kind as the ingresses start it.
func (erasures) Ingress(p Platform) (ingress.Kind, error) {
	// Built without connections too (the operator's commands read its envelope).
	var dec erasure.Decoder
	var hasher personal.Hasher
	if p.Customers != nil {
		dec, hasher = erasure.NewDecoder(p.Customers.PrintKey()), p.Customers.Hasher()
	}
	return NewRecorded(Spec[erasure.Input]{
		Name:     erasure.KindName,
		Prefix:   "era_",
		Envelope: ingress.Envelope{Field: "erasure", CloudEventType: "dev.orderflow.CustomerErasureRequested.v1"},
		Decode:   dec.Decode,
		Workflow: erasure.EraseCustomer,
		Input: func(tenant, workflowID, id string, req ingress.Request) erasure.Input {
			r := req.(erasure.Request)
			return erasure.Input{Tenant: tenant, WorkflowID: workflowID, ID: id,
				CustomerHash: hasher.Hash(tenant, r.CustomerID), Print: r.Fingerprint()}
		},
		Fingerprint: func(in erasure.Input) []byte { return in.Print },
		Record: func(_, _, id string, _ ingress.Request) (string, []byte) {
			body, _ := json.Marshal(erasure.Answer{ID: id, Status: erasure.StatusWaiting})
			return erasure.StatusWaiting, body
		},
	}, p)
}

// Workflows registers the erasure workflow.
func (erasures) Workflows(r sdkworker.WorkflowRegistry) { r.RegisterWorkflow(erasure.EraseCustomer) }

// Activities are the erasure's steps.
func (erasures) Activities(p Platform) ([]any, error) {
	return []any{erasure.NewActivities(p.Pool, p.Customers, p.Records)}, nil
}

// Deletes: DELETE /v1/customers/{id} is an erasure of customer_id {id}.
func (erasures) Deletes() (path, field string) { return "customers", "customer_id" }
