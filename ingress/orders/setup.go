package orders

import (
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/workflows"
)

// NewAPI is the API process's order service on the ingress's Setup: keyed
// requests on keys (its idempotency store, which the process also purges),
// orders started with policy, and intents read for an order's next action
// (nil: none shown).
func NewAPI(s intake.Setup, keys *idempotency.Store, policy workflows.Policy, intents IntentReader) *Service {
	svc := NewService(intake.NewAPI(s, keys), orderstore.New(s.Pool), NewTemporal(s.Starter(), policy), intents, s.Logger)
	if s.Customers != nil {
		svc.kind.SealWith(s.Customers)
	}
	return svc
}

// ForEvents is the order kind as the Kafka ingress starts it: no read model,
// since an event's answer is its workflow, started with policy.
func ForEvents(s intake.Setup, policy workflows.Policy) *Kind {
	k := New(nil, NewTemporal(s.Starter(), policy))
	if s.Customers != nil {
		k.SealWith(s.Customers)
	}
	return k
}

// PolicyFromEnv reads how orders treat time (CANCEL_WINDOW, PAYMENT_LOOKUP_DELAY,
// PAYMENT_ACTION_TIMEOUT, PAYMENT_POLL_INTERVAL): both ingresses start workflows
// with it, so both processes read it alike.
func PolicyFromEnv(e *config.Env) workflows.Policy {
	p := workflows.Policy{
		CancelWindow:  e.Duration("CANCEL_WINDOW", 0),
		LookupDelay:   e.Duration("PAYMENT_LOOKUP_DELAY", workflows.DefaultLookupDelay),
		ActionTimeout: e.Duration("PAYMENT_ACTION_TIMEOUT", workflows.DefaultActionTimeout),
		IntentPoll:    e.Duration("PAYMENT_POLL_INTERVAL", workflows.DefaultIntentPoll),
	}
	e.Invalid(p.Check())
	return p
}
