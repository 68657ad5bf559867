package intake

import (
	"context"
	"time"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/platform/identity"
)

// Events is the Kafka ingress's intake: events started as at most one workflow per
// eventId (or CloudEvent source and id) and kind, deduplicated in the consumer
// group's event log.
type Events struct {
	log   EventLog
	kinds []ingress.Kind
	group string
}

// NewEvents is the intake of consumer group's events on the event log, starting
// the kinds given (the first is the one a plain event without a kind's member
// is refused as).
func NewEvents(log EventLog, group string, kinds ...ingress.Kind) *Events {
	return &Events{log: log, kinds: kinds, group: group}
}

// Kinds are the kinds the intake starts, in the order given.
func (s *Events) Kinds() []ingress.Kind { return s.kinds }

// SubmitEvent starts the workflow of kind k that an event asks for. processed_events
// is read first: it is the dedup that outlives Temporal's retention, and it tells a
// redelivery from an eventId reused with another request.
func (s *Events) SubmitEvent(ctx context.Context, k ingress.Kind, tenant, eventID string, req ingress.Request) Result {
	wf := identity.WorkflowID(k.Name(), tenant, identity.FromEvent, eventID)
	return s.submit(ctx, k, tenant, identity.StoredKey(k.Name(), eventID), wf, req)
}

// SubmitCloudEvent starts the workflow of the CloudEvent that source and id
// identify, as SubmitEvent does. Its row in the event log is keyed "ce " and the
// pair's key: no eventId holds a space, so neither can be taken for the other.
func (s *Events) SubmitCloudEvent(ctx context.Context, k ingress.Kind, tenant, source, id string, req ingress.Request) Result {
	key := identity.CloudEventKey(source, id)
	wf := identity.WorkflowID(k.Name(), tenant, identity.FromCloudEvent, key)
	return s.submit(ctx, k, tenant, identity.StoredKey(k.Name(), "ce "+key), wf, req)
}

func (s *Events) submit(ctx context.Context, k ingress.Kind, tenant, eventID, wf string, req ingress.Request) Result {
	out := Result{ID: k.PublicID(wf), Kind: Replayed}
	// same: a row older than fingerprints (nil) counts as this event.
	same := func(stored []byte) bool { return stored == nil || req.Same(stored) }
	done, stored, err := s.log.Processed(ctx, s.group, tenant, eventID, wf, recordedQuery(k))
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
	created, err := k.StartNew(ctx, tenant, wf, req)
	if err != nil {
		return unavailable("workflow start", err)
	}
	out.StartTook = time.Since(began)
	// The row holds the request the workflow runs, whichever delivery writes it: a
	// delivery whose start found the workflow (a concurrent one, or a redelivery
	// after a crash between start and row) records the workflow's request, not its
	// own.
	fp := req.Fingerprint()
	if !created {
		if fp, err = k.Placed(ctx, wf); err != nil {
			return unavailable("workflow input", err)
		}
	}
	if _, stored, err = s.log.MarkProcessed(ctx, s.group, tenant, eventID, fp, wf); err != nil {
		return unavailable("event log", err)
	}
	switch {
	case created:
		out.Kind = Created
	case !same(stored):
		out.Kind = Mismatch // the workflow runs another request under this eventId
	}
	return out
}
