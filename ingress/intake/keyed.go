package intake

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/platform/identity"
)

// StartBudget bounds the critical section of a keyed start (claim, start, record,
// store the response). It runs detached from the caller's context, so a client that
// hangs up cannot leave it half done; a stop gives it this long.
const StartBudget = 10 * time.Second

// Requests is the HTTP ingress's intake: requests of every kind with an
// Idempotency-Key, each started as at most one workflow.
type Requests struct {
	keys   KeyStore
	logger *slog.Logger
}

// NewRequests is the intake of keyed requests on the idempotency store keys.
func NewRequests(keys KeyStore, logger *slog.Logger) *Requests {
	return &Requests{keys: keys, logger: logger}
}

// Lookup returns the workflow the tenant's key of kind k was claimed for,
// expired or not: the key's record knows it even if the ID scheme changed since.
func (s *Requests) Lookup(ctx context.Context, k ingress.Kind, tenant, key string) (workflowID string, found bool, err error) {
	return s.keys.Lookup(ctx, tenant, identity.StoredKey(k.Name(), key))
}

// Submit turns a request of kind k with an Idempotency-Key into at most one
// workflow. wait > 0 waits up to that long for it to settle (HTTP's Prefer: wait).
// The key is the tenant's and the kind's: the same string used for two kinds
// names two workflows.
func (s *Requests) Submit(ctx context.Context, k ingress.Kind, tenant, key string, req ingress.Request, wait time.Duration) Result {
	wf := identity.WorkflowID(k.Name(), tenant, identity.FromHTTP, key)
	stored := identity.StoredKey(k.Name(), key)
	lease := wait + StartBudget
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lease)
	defer cancel()

	recorded := recordedQuery(k)
	fp := idempotency.Print{Value: req.Fingerprint(), Matches: req.Same, Recorded: recorded}
	claim, rec, err := s.keys.Claim(cctx, tenant, stored, fp, wf, lease)
	if err != nil {
		return unavailable("idempotency store", err)
	}
	if claim == idempotency.Claimed {
		// Taken over from a request that died: its workflow may exist, under the
		// ID derived when the key was first claimed.
		wf = rec.WorkflowID
	}
	if claim == idempotency.Claimed && (rec.Recorded || recorded == nil) {
		// Postgres outlives Temporal's retention and the key's record: a workflow
		// that is recorded answers, and none starts again for it. The claim's own
		// statement asks a ledgered kind's table; another kind's record is read here.
		if done, ok := s.existing(cctx, k, tenant, wf, stored, req); ok {
			done.KeyExpires = rec.Expires
			return done
		}
	}
	out := Result{Kind: claim, ID: k.PublicID(rec.WorkflowID), Status: rec.Status, Body: rec.Body, RetryAfter: rec.RetryAfter,
		KeyExpires: rec.Expires}
	if claim != idempotency.Claimed {
		return out // Replayed, Mismatch or InFlight
	}
	if err := k.Admit(cctx, tenant, req); err != nil {
		s.unlock(ctx, cctx, tenant, stored)
		return refused(err)
	}
	view, status, err := s.start(ctx, cctx, k, tenant, wf, req, wait, &out)
	if err != nil {
		// The start may have happened: the key keeps its fingerprint and only
		// drops its lease, so a retry lands on the same workflow or gets 422.
		s.unlock(ctx, cctx, tenant, stored)
		return unavailable("workflow start", err)
	}
	out.Kind, out.Status, out.Body = Created, status, view.Body
	if err := s.keys.Complete(cctx, tenant, stored, nil, out.Status, out.Body); err != nil {
		// Not the client's problem: a retry re-claims after the lease and finds the
		// same workflow.
		s.logger.WarnContext(ctx, "store idempotent response", "err", err)
	}
	return out
}

func (s *Requests) unlock(ctx, cctx context.Context, tenant, stored string) {
	if err := s.keys.Unlock(cctx, tenant, stored); err != nil {
		s.logger.WarnContext(ctx, "unlock idempotency key", "err", err)
	}
}

// refused is the Result of a request its kind refused, or could not judge.
func refused(err error) Result {
	var r *ingress.Refusal
	if errors.As(err, &r) {
		return Result{Kind: Refused, Err: r}
	}
	return unavailable("admission", err)
}

// start starts the workflow and answers with its view and status: 201 if it
// settled within wait, else 202. With wait > 0 it first tries the start and the
// wait in one call, on the client's context, which a drain cuts short: whatever
// became of it, the plain start (idempotent) is what the answer rests on.
func (s *Requests) start(ctx, cctx context.Context, k ingress.Kind, tenant, wf string, req ingress.Request, wait time.Duration, out *Result) (ingress.View, int, error) {
	began := time.Now()
	if wait > 0 {
		if v, err := k.StartSettled(ctx, tenant, wf, req, wait); err == nil {
			return v, statusOf(v.Final), nil
		}
	}
	started := time.Now()
	run, err := k.Start(cctx, tenant, wf, req)
	out.StartTook = time.Since(started)
	if err != nil {
		return ingress.View{}, 0, err
	}
	// The read model has the request before the client hears of it.
	view, err := k.Record(cctx, tenant, wf, req)
	if err != nil || wait <= 0 {
		return view, http.StatusAccepted, err
	}
	return s.await(ctx, cctx, k, run, tenant, wf, wait-time.Since(began))
}

func statusOf(final bool) int {
	if final {
		return http.StatusCreated
	}
	return http.StatusAccepted
}

// await waits up to wait (on the client's ctx) for the workflow to end and returns
// its view as it stands: 201 if it ended (successfully or not: the view says
// which), 202 if it still runs.
func (s *Requests) await(ctx, cctx context.Context, k ingress.Kind, run ingress.Run, tenant, wf string, wait time.Duration) (ingress.View, int, error) {
	wctx, wcancel := context.WithTimeout(ctx, wait)
	err := run.Get(wctx, nil)
	wcancel()
	ended := wctx.Err() == nil || err == nil
	view, err := k.View(cctx, tenant, wf)
	return view, statusOf(ended), err
}

// existing answers a claimed key whose workflow is already recorded: a request
// resent after its key's record expired (and perhaps after Temporal deleted the
// workflow). The same request gets the view as it stands; another body with the
// key gets Mismatch, and the key is bound again to the workflow's own request. ok
// is false when there is no record (or Postgres cannot say), and the start goes on.
func (s *Requests) existing(ctx context.Context, k ingress.Kind, tenant, wf, stored string, req ingress.Request) (Result, bool) {
	view, err := k.View(ctx, tenant, wf)
	if err != nil {
		return Result{}, false
	}
	res := Result{Kind: Replayed, ID: view.ID, Status: http.StatusAccepted, Body: view.Body}
	if view.Fingerprint != nil && !req.Same(view.Fingerprint) {
		res = Result{Kind: Mismatch, ID: view.ID}
	}
	if err := s.keys.Complete(ctx, tenant, stored, view.Fingerprint, http.StatusAccepted, view.Body); err != nil {
		s.logger.WarnContext(ctx, "store idempotent response", "err", err)
	}
	return res, true
}
