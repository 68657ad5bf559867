package activities

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/orderflow/orderflow/internal/ledger"
	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/provider"
)

// ChargesAPI is the provider's Charges API, which runs started before
// PaymentIntents pay through.
type ChargesAPI interface {
	Charge(ctx context.Context, key string, amount int64, currency, paymentMethod, orderID string) (provider.Charge, error)
	Refund(ctx context.Context, key, chargeID string, amount int64) (provider.Refund, error)
	SearchCharges(ctx context.Context, orderID string) ([]provider.Charge, error)
	ListRefunds(ctx context.Context, chargeID string) ([]provider.Refund, error)
}

var _ ChargesAPI = (*provider.Client)(nil)

// Charges are the Charges-API payments of runs started before PaymentIntents: only
// the frozen workflows/orderv1 schedules them, and they go with it.
type Charges struct {
	p   *Payments // the ledger, metrics and answers they share
	api ChargesAPI
}

// NewCharges returns the Charges-API activities beside p.
func NewCharges(p *Payments, api ChargesAPI) *Charges { return &Charges{p: p, api: api} }

// ChargeInput asks for one order's charge.
type ChargeInput struct {
	Step
	PaymentMethod string
}

// ChargeResult is a successful charge.
type ChargeResult struct {
	Key      string
	ChargeID string
}

// RefundInput asks for the refund of one order's charge.
type RefundInput struct {
	Step
	ChargeID string
}

// Charge charges the order with in.Key on every attempt, so the provider charges at
// most once for it whatever happens to this process or its answers. If the ledger
// already holds a success for the key (a run started again after Temporal's
// retention), that charge is returned and the provider is not called.
func (a *Charges) Charge(ctx context.Context, in ChargeInput) (ChargeResult, error) {
	key, id, err := a.call(ctx, in.Step, ledger.Charge, in.PaymentMethod)
	return ChargeResult{Key: key, ChargeID: id}, err
}

// Refund refunds the order's charge in full with in.Key.
func (a *Charges) Refund(ctx context.Context, in RefundInput) (RefundResult, error) {
	key, id, err := a.call(ctx, in.Step, ledger.Refund, in.ChargeID)
	return RefundResult{Key: key, RefundID: id}, err
}

// LookupInput asks whether an order was charged (ChargeID empty) or its charge
// refunded; Key is the key whose outcome is unknown.
type LookupInput struct {
	OrderID  string
	ChargeID string
	Key      string
	// Amount is what a refund must give back: the charge counts as refunded only
	// when its refunds, anyone's, add up to it. Zero in lookups scheduled before it
	// existed, which took any refund.
	Amount int64
}

// LookupResult is what the provider holds: the succeeded charge (or refund), if any.
type LookupResult struct {
	Found bool
	ID    string
}

// Lookup resolves an unknown outcome by asking the provider what exists, never by
// guessing. Found: the ledger row of Key records it. Not found: every unsettled row
// of the order of that kind is marked absent (the caller has waited the provider's
// consistency window before asking).
func (a *Charges) Lookup(ctx context.Context, in LookupInput) (LookupResult, error) {
	kind, res := ledger.Charge, LookupResult{}
	if in.ChargeID == "" {
		charges, err := a.api.SearchCharges(ctx, in.OrderID)
		if err != nil {
			return res, a.p.lookupFailed(err)
		}
		for _, c := range charges {
			if c.Status == "succeeded" {
				res = LookupResult{Found: true, ID: c.ID}
				break
			}
		}
	} else {
		kind = ledger.Refund
		refunds, err := a.api.ListRefunds(ctx, in.ChargeID)
		if err != nil {
			return res, a.p.lookupFailed(err)
		}
		var refunded int64
		for _, r := range refunds {
			if r.Status == "succeeded" || r.Status == "pending" {
				refunded += r.Amount
				if refunded >= in.Amount {
					res = LookupResult{Found: true, ID: r.ID}
					break
				}
			}
		}
	}
	if res.Found {
		return res, a.p.ledger.Settle(ctx, in.Key, ledger.Succeeded, res.ID)
	}
	return res, a.p.ledger.MarkAbsent(ctx, in.OrderID, kind)
}

// call records the payment in the ledger (a charge's order moving to
// PAYMENT_PENDING in the same transaction: until an answer comes, nobody knows
// whether the card was charged), sends it with heartbeats, and records the
// answer; of is the payment method a charge charges or the charge a refund
// refunds. A key the ledger already holds as succeeded is not sent again.
func (a *Charges) call(ctx context.Context, s Step, kind ledger.Kind, of string) (key, providerID string, err error) {
	p := ledger.Payment{Key: s.Key, Kind: kind, OrderID: s.OrderID, Amount: s.Amount, Currency: s.Currency}
	if p.Key == "" {
		p.Key = order.LegacyPaymentKey(s.WorkflowID, string(kind))
	}
	var pending func(pgx.Tx) error
	if kind == ledger.Charge {
		pending = a.p.pending(ctx, p.OrderID)
	}
	e, err := a.p.ledger.Open(ctx, p, pending)
	if err != nil || (e.Status == ledger.Succeeded && e.ProviderID != "") {
		return p.Key, e.ProviderID, err // a success is the ledger of record's already
	}
	stop := Heartbeat(ctx)
	providerID, err = a.send(ctx, p, of)
	stop()
	if err != nil {
		if s.Key == "" && classify(err).errType == ErrPaymentInFlight {
			// Runs started before derived keys end FAILED on any typed error:
			// Temporal retries their in-use key within the charge's hour instead.
			return p.Key, "", fmt.Errorf("payment %s: %w", p.Key, err)
		}
		return p.Key, "", a.p.failed(ctx, p.Key, err)
	}
	return p.Key, providerID, a.p.ledger.Settle(ctx, p.Key, ledger.Succeeded, providerID)
}

// send asks the provider for the payment and returns the ID of what it made.
func (a *Charges) send(ctx context.Context, p ledger.Payment, of string) (string, error) {
	if p.Kind == ledger.Refund {
		re, err := a.api.Refund(ctx, p.Key, of, p.Amount)
		return re.ID, err
	}
	ch, err := a.api.Charge(ctx, p.Key, p.Amount, p.Currency, of, p.OrderID)
	return ch.ID, err
}
