// Package webhooks is orderflow's third at-least-once ingress: the payment
// provider's webhooks (POST /webhooks/stripe). The sender retries for days,
// duplicates, reorders, and anyone on the internet can POST here, so the handler
// trusts nothing but the signature, and of a signed event only which intent it is
// about: it reads that intent from the provider, finds its order through our own
// ledger (checked against the intent's metadata), and wakes the order's workflow,
// which reads the intent again and acts on what the provider holds. A webhook can
// make an order settle sooner, never differently: every order also reads its
// intent on a backoff. A refund or dispute of a paid order's charge starts the run
// that reads the intent's refunds and disputes and moves the order to them
// (workflows.FollowPayment); the reconciler starts the same for what it lists.
package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/orderflow/orderflow/tenants"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/tenants/fairness"
	"github.com/orderflow/orderflow/workflows"
)

// Limits of a delivery.
const (
	// MaxBodyBytes caps an event: Stripe's are a few kilobytes, an intent with its
	// metadata well under this.
	MaxBodyBytes = 256 << 10
	// Tolerance is how old a signature may be (Stripe's libraries default to 5
	// minutes): a genuine event replayed later is refused.
	Tolerance = 5 * time.Minute
	// budget bounds the handling of one delivery; a claim is held a little longer,
	// so no second process takes an event the first is still handling.
	budget    = 10 * time.Second
	claimHold = budget + 5*time.Second
	// MaxReading bounds the bodies read at once, before any signature is checked:
	// with MaxBodyBytes each, what anyone on the internet can make the API hold is
	// MaxReading × 2 × MaxBodyBytes (32 MiB; a body of undeclared length may grow
	// its buffer once). A delivery over it is told to come back (Stripe retries for
	// three days) and its connection is closed.
	MaxReading = 64
	// readWithin bounds how long one body may take to arrive: a sender that holds
	// its last byte gives its place back.
	readWithin = 5 * time.Second
)

// Outcome is what handling an event did.
type Outcome string

const (
	Woke          Outcome = "woke"           // the order's workflow was told to read its intent
	NoChange      Outcome = "no_change"      // the order is not waiting, or the intent still waits on its customer
	UnknownIntent Outcome = "unknown_intent" // no order of ours pays with this intent
	Ignored       Outcome = "ignored"        // not about a PaymentIntent
	Followed      Outcome = "followed"       // a refund or dispute of a paid order: its payment is read again
)

// Intents reads PaymentIntents from the provider.
type Intents interface {
	RetrieveIntent(ctx context.Context, intentID string) (provider.Intent, error)
}

// Signaler wakes workflows and starts the runs that follow a paid order's payment
// (Temporal's client does both).
type Signaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

var _ Intents = (*provider.Client)(nil)

// Deps are what the handler needs.
type Deps struct {
	// Secrets are the endpoint's signing secrets; during a rotation both the old
	// and the new one (secret: never logged).
	Secrets  []string
	Store    *Store
	Ledger   *ledger.Store
	Orders   *orderstore.Store
	Intents  Intents
	Temporal Signaler
	// TaskQueue is where the runs that follow a payment go, with their tenant's
	// Fairness.
	TaskQueue string
	Fairness  fairness.Weights
	Logger    *slog.Logger
	Registry  prometheus.Registerer
	// ProblemBase prefixes a refusal's kind to make its problem type URL (empty:
	// httpapi's default).
	ProblemBase string
}

// ProblemKinds are the problem types the endpoint answers, for their
// documentation.
func ProblemKinds() []string {
	var out []string
	for _, r := range []string{"busy", "too_large", "unreadable", "stale", "bad_signature", "malformed", "store_unavailable", "in_progress", "retry"} {
		out = append(out, "webhook-"+r)
	}
	return out
}

var errBusy = errors.New("too many bodies being read")

// read reads the body within the budget: a place among MaxReading, at most
// MaxBodyBytes, arriving within readWithin. A declared length over the cap is
// refused before a byte is read.
func (h *Handler) read(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBodyBytes {
		return nil, &http.MaxBytesError{Limit: MaxBodyBytes}
	}
	select {
	case h.reading <- struct{}{}:
	default:
		return nil, errBusy
	}
	defer func() { <-h.reading }()
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(readWithin))
	size := r.ContentLength
	if size < 0 || size > MaxBodyBytes {
		size = 4 << 10
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead)) // no growth for a declared length
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	return buf.Bytes(), err
}

// Handler serves POST /webhooks/stripe.
type Handler struct {
	Deps
	events  *prometheus.CounterVec
	reading chan struct{} // a place per body being read
}

// New returns the handler; it needs at least one secret.
func New(d Deps) (*Handler, error) {
	if len(d.Secrets) == 0 {
		return nil, errors.New("webhooks: no signing secret")
	}
	h := &Handler{Deps: d, events: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "orderflow_webhook_deliveries_total",
		Help: "Webhook deliveries by result: an outcome of handling, or why the delivery was refused or deferred.",
	}, []string{"result"}), reading: make(chan struct{}, MaxReading)}
	d.Registry.MustRegister(h.events)
	return h, nil
}

var (
	eventID  = regexp.MustCompile(`^evt_[A-Za-z0-9]{1,250}$`)
	intentID = regexp.MustCompile(`^pi_[A-Za-z0-9]{1,250}$`)
)

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := h.read(w, r)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.Is(err, errBusy):
		w.Header().Set("Connection", "close") // its body is not read
		h.retryLater(w, "busy")
		return
	case errors.As(err, &tooLarge):
		h.refuse(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("event larger than %d bytes", MaxBodyBytes))
		return
	case err != nil:
		h.refuse(w, http.StatusBadRequest, "unreadable", "unreadable body")
		return
	}
	ev, err := h.verify(body, r.Header.Get("Stripe-Signature"))
	switch {
	case errors.Is(err, webhook.ErrTooOld):
		h.refuse(w, http.StatusBadRequest, "stale", "signature timestamp outside the tolerance")
		return
	case err != nil:
		h.refuse(w, http.StatusBadRequest, "bad_signature", "invalid signature")
		return
	case !eventID.MatchString(ev.ID):
		h.refuse(w, http.StatusBadRequest, "malformed", "malformed event ID")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), budget)
	defer cancel()
	claimed, outcome, err := h.Store.Claim(ctx, ev.ID, string(ev.Type), claimHold)
	switch {
	case err != nil:
		h.Logger.Warn("webhook: claim", "event", ev.ID, "err", err)
		h.retryLater(w, "store_unavailable")
		return
	case outcome != "":
		h.answer(w, "duplicate", Outcome(outcome))
		return
	case !claimed:
		w.Header().Set("Retry-After", "5")
		h.refuse(w, http.StatusConflict, "in_progress", "this event is being handled")
		return
	}
	intent, res, err := h.handle(ctx, ev)
	if err == nil {
		err = h.Store.Finish(ctx, ev.ID, intent, res)
	}
	if err != nil {
		h.Logger.Warn("webhook: handle", "event", ev.ID, "type", ev.Type, "err", err)
		if rerr := h.Store.Release(context.WithoutCancel(ctx), ev.ID); rerr != nil {
			h.Logger.Warn("webhook: release", "event", ev.ID, "err", rerr)
		}
		h.retryLater(w, "retry")
		return
	}
	h.Logger.Info("webhook", "event", ev.ID, "type", ev.Type, "intent", intent, "outcome", res)
	h.answer(w, string(res), res)
}

// verify checks the signature against every secret; the event's API version is
// not checked, since only its object's type and ID are read (the intent itself is
// read with our pinned version).
func (h *Handler) verify(body []byte, header string) (stripe.Event, error) {
	var err error
	for _, secret := range h.Secrets {
		var ev stripe.Event
		ev, err = webhook.ConstructEventWithOptions(body, header, secret, webhook.ConstructEventOptions{
			Tolerance: Tolerance, IgnoreAPIVersionMismatch: true,
		})
		if err == nil {
			return ev, nil
		}
		if errors.Is(err, webhook.ErrTooOld) || errors.Is(err, webhook.ErrNotSigned) || errors.Is(err, webhook.ErrInvalidHeader) {
			return ev, err // the same for every secret
		}
	}
	return stripe.Event{}, err
}

// handle acts on a claimed event and returns the intent it was about.
func (h *Handler) handle(ctx context.Context, ev stripe.Event) (string, Outcome, error) {
	id := intentOf(ev)
	if !intentID.MatchString(id) {
		return "", Ignored, nil
	}
	pi, err := h.Intents.RetrieveIntent(provider.WithTenant(ctx, provider.Webhooks), id) // their own lane of the budget
	var perr *provider.Error
	switch {
	case errors.As(err, &perr) && perr.StatusCode == http.StatusNotFound:
		return id, UnknownIntent, nil
	case err != nil:
		return id, "", fmt.Errorf("read intent %s: %w", id, err)
	}
	orderID, err := h.Ledger.OrderOfIntent(ctx, id)
	if err != nil {
		return id, "", err
	}
	// Our ledger names the order; the intent's metadata, set when we created it,
	// must name the same order and give its tenant. Neither alone decides.
	if orderID == "" || pi.Metadata["order_id"] != orderID || !tenants.Valid(pi.Metadata["tenant"]) {
		return id, UnknownIntent, nil
	}
	o, err := h.Orders.Get(ctx, pi.Metadata["tenant"], orderID)
	switch {
	case errors.Is(err, orderstore.ErrNotFound):
		return id, UnknownIntent, nil
	case err != nil:
		return id, "", err
	}
	if aboutPaidCharge(ev.Type) && order.AfterPayment(o.Status) && o.PaymentRef == id {
		return id, Followed, workflows.StartFollow(ctx, h.Temporal, h.TaskQueue, h.Fairness, order.Order{ID: o.ID, Tenant: pi.Metadata["tenant"],
			WorkflowID: o.WorkflowID, Amount: o.Amount, Currency: o.Currency}, id, ev.ID)
	}
	if !waitsOnIntent(o.Status) || pi.Status == "requires_action" || pi.Status == "requires_confirmation" {
		return id, NoChange, nil
	}
	err = h.Temporal.SignalWorkflow(ctx, o.WorkflowID, "", workflows.SignalIntentChanged, id)
	var gone *serviceerror.NotFound
	switch {
	case errors.As(err, &gone): // the workflow ended: the order is settled
		return id, NoChange, nil
	case err != nil:
		return id, "", fmt.Errorf("wake the order %s: %w", orderID, err)
	}
	return id, Woke, nil
}

// aboutPaidCharge reports the events of what others do to a charge after it
// succeeded: refunds and disputes.
func aboutPaidCharge(typ stripe.EventType) bool {
	switch typ {
	case "charge.refunded", "charge.refund.updated", "charge.dispute.created", "charge.dispute.closed", "charge.dispute.funds_withdrawn":
		return true
	}
	return false
}

// waitsOnIntent reports the order statuses in which the workflow waits on its
// intent.
func waitsOnIntent(s order.Status) bool {
	return s == order.StatusPaymentPending || s == order.StatusPaymentUnknown || s == order.StatusActionRequired
}

// intentOf is the ID of the PaymentIntent an event is about: the object itself,
// or the intent a charge or refund belongs to.
func intentOf(ev stripe.Event) string {
	if ev.Data == nil {
		return ""
	}
	obj := ev.Data.Object
	if obj["object"] == "payment_intent" {
		id, _ := obj["id"].(string)
		return id
	}
	switch pi := obj["payment_intent"].(type) {
	case string:
		return pi
	case map[string]any:
		id, _ := pi["id"].(string)
		return id
	}
	return ""
}

func (h *Handler) answer(w http.ResponseWriter, result string, outcome Outcome) {
	h.events.WithLabelValues(result).Inc()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"received": true, "outcome": outcome, "duplicate": result == "duplicate"})
}

// retryLater answers 503: the provider delivers the event again.
func (h *Handler) retryLater(w http.ResponseWriter, result string) {
	w.Header().Set("Retry-After", "5")
	h.refuse(w, http.StatusServiceUnavailable, result, "try again later")
}

func (h *Handler) problemBase() string {
	if h.ProblemBase != "" {
		return h.ProblemBase
	}
	return "https://orderflow.dev/problems/"
}

func (h *Handler) refuse(w http.ResponseWriter, status int, result, detail string) {
	h.events.WithLabelValues(result).Inc()
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type": h.problemBase() + "webhook-" + result, "title": http.StatusText(status), "status": status, "detail": detail,
	})
}
