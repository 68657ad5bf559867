package intake

import (
	"context"
	"time"

	"github.com/orderflow/orderflow/internal/order"
)

// Events is the Kafka ingress's intake: events placed as at most one order per
// eventId (or CloudEvent source and id), deduplicated in the consumer group's event
// log.
type Events struct {
	log       EventLog
	workflows Workflows
	group     string
}

func newEvents(log EventLog, workflows Workflows, group string) *Events {
	return &Events{log: log, workflows: workflows, group: group}
}

// PlaceEvent places the order of an event. processed_events is read first: it is
// the dedup that outlives Temporal's retention, and it tells a redelivery from an
// eventId reused with another order.
func (s *Events) PlaceEvent(ctx context.Context, tenant, eventID string, req Request) Result {
	return s.place(ctx, tenant, eventID, order.WorkflowID(tenant, order.FromEvent, eventID), req)
}

// PlaceCloudEvent places the order of the CloudEvent that source and id identify,
// as PlaceEvent does. Its row in the event log is keyed "ce " and the pair's key:
// no eventId holds a space, so neither can be taken for the other.
func (s *Events) PlaceCloudEvent(ctx context.Context, tenant, source, id string, req Request) Result {
	key := order.CloudEventKey(source, id)
	return s.place(ctx, tenant, "ce "+key, order.WorkflowID(tenant, order.FromCloudEvent, key), req)
}

func (s *Events) place(ctx context.Context, tenant, eventID, workflowID string, req Request) Result {
	o := req.Order(tenant, workflowID)
	out := Result{OrderID: o.ID, Kind: Replayed}
	// same: a row older than fingerprints (nil) counts as this event.
	same := func(stored []byte) bool { return stored == nil || SameRequest(stored, req) }
	done, stored, err := s.log.Processed(ctx, s.group, o.Tenant, eventID, o.WorkflowID)
	switch {
	case err != nil:
		return unavailable("event log", err)
	case done && !same(stored):
		out.Kind = Mismatch
		return out
	case done:
		return out
	}
	began := time.Now()
	created, err := s.workflows.StartNew(ctx, o)
	if err != nil {
		return unavailable("workflow start", err)
	}
	out.StartTook = time.Since(began)
	// The row holds the order the workflow runs, whichever delivery writes it: a
	// delivery whose start found the workflow (a concurrent one, or a redelivery
	// after a crash between start and row) records the workflow's order, not its
	// own.
	fp := Fingerprint(req)
	if !created {
		made, err := s.workflows.Placed(ctx, o.WorkflowID)
		if err != nil {
			return unavailable("workflow input", err)
		}
		fp = orderFingerprint(made)
	}
	if _, stored, err = s.log.MarkProcessed(ctx, s.group, o.Tenant, eventID, fp, o.WorkflowID); err != nil {
		return unavailable("event log", err)
	}
	switch {
	case created:
		out.Kind = Created
	case !same(stored):
		out.Kind = Mismatch // the workflow runs another order under this eventId
	}
	return out
}
