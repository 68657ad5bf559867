// Package shipment is a kind of workflow a team adds to orderflow in a module of
// its own: a shipment books a parcel with a carrier, exactly once. Everything
// else a client and an operator get (keyed starts and replays, 422 and 409,
// Prefer: wait, Kafka events and CloudEvents, the dead-letter queue, tenants,
// budgets, fairness, encryption, traces) comes from orderflow's ingress.
package shipment

import (
	"encoding/json"

	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/platform/records"
)

// KindName is the kind's name: it begins its workflow IDs and scopes its keys.
const KindName = "shipment"

// The statuses of a shipment.
const (
	StatusPending = "PENDING"
	StatusBooked  = "BOOKED"
	StatusRefused = "REFUSED"
)

// Shipment is a request with the identity its workflow gave it.
type Shipment struct {
	Request
	ID, Tenant, WorkflowID string
}

// IDFor is the public ID of the shipment of workflowID (shp_...).
func IDFor(workflowID string) string { return identity.PublicID("shp_", KindName, workflowID) }

// View is the shipment as a client reads it. It holds no address: the address
// goes to the carrier and into the workflow's history, which the deployment's
// keys encrypt, never into a table in plain text.
type View struct {
	ID        string `json:"id"`
	Reference string `json:"reference"`
	Grams     int    `json:"weight_grams"`
	Status    string `json:"status"`
	BookingID string `json:"booking_id,omitempty"`
}

// View is the shipment in status, booked as bookingID.
func (s Shipment) View(status, bookingID string) View {
	return View{ID: s.ID, Reference: s.Reference, Grams: s.Grams, Status: status, BookingID: bookingID}
}

// Record is the shipment's record as it starts: PENDING.
func (s Shipment) Record() records.Record {
	body, _ := json.Marshal(s.View(StatusPending, "")) // plain fields: cannot fail
	return records.Record{Tenant: s.Tenant, Kind: KindName, ID: s.ID, WorkflowID: s.WorkflowID, Status: StatusPending,
		Fingerprint: s.Fingerprint(), Body: body}
}
