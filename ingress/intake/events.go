package intake

import (
	"context"
	"time"

	"github.com/orderflow/orderflow/internal/order"
)

// Events is the Kafka ingress's intake: events placed as at most one order per
// eventId, deduplicated in the consumer group's event log.
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
	o := req.Order(tenant, order.WorkflowID(tenant, order.FromEvent, eventID))
	out := Result{OrderID: o.ID, Kind: Replayed}
	// same: a row older than fingerprints (nil) counts as this event.
	same := func(stored []byte) bool { return stored == nil || SameRequest(stored, req) }
	done, stored, err := s.log.Processed(ctx, s.group, o.Tenant, eventID)
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
