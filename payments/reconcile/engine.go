package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/provider"
)

// engineSide starts a recovery run for each unsettled order whose workflow is not
// running.
func (r *Reconciler) engineSide(ctx context.Context, p *pass) error {
	unchecked := func(o orderstore.Unsettled, err error) error {
		return r.failed(ctx, p, Finding{Kind: KindUnchecked, OrderID: o.ID, Tenant: o.Tenant, Amount: o.Amount, Currency: o.Currency}, err)
	}
	unsettled, closed, err := r.workflowless(ctx, p.start, unchecked)
	if err != nil {
		return err
	}
	p.rep.Unsettled = unsettled
	for _, o := range closed {
		if err := r.recover(ctx, p, o); err != nil {
			return err
		}
	}
	return nil
}

// recover starts the recovery run of an unsettled order whose workflow is not
// running. A failure is a finding: the next pass, which reads every unsettled
// order, tries again.
func (r *Reconciler) recover(ctx context.Context, p *pass, o orderstore.Unsettled) error {
	f := workflowClosed(o)
	done, err := r.rebuildUnsettled(ctx, p, o)
	if err != nil {
		return r.failed(ctx, p, Finding{Kind: KindUnchecked, OrderID: o.ID, Tenant: o.Tenant, Amount: o.Amount, Currency: o.Currency},
			fmt.Errorf("read the workflow of order %s: %w", o.ID, err))
	}
	if done {
		return nil
	}
	intent, err := r.ledger.IntentOfOrder(ctx, o.ID)
	if err == nil && intent == "" {
		// The ledger may have lost it (a restore): a run given no intent ends the
		// order CANCELLED, so the provider is asked first.
		intent, err = r.intentAtProvider(ctx, p, o)
	}
	if err == nil {
		f.ProviderID = intent
		err = r.engine.Recover(ctx, o, intent)
	}
	if err != nil {
		return r.failed(ctx, p, f, fmt.Errorf("recover order %s: %w", o.ID, err))
	}
	p.rep.Recovered++
	f.Action = ActionRecoveryStarted
	return r.record(ctx, p, f)
}

// intentAtProvider finds the order's intent among those the provider created
// since the order was (its metadata names the order and its tenant): the one
// that succeeded, or else the newest; "" for none.
func (r *Reconciler) intentAtProvider(ctx context.Context, p *pass, o orderstore.Unsettled) (string, error) {
	var found string
	err := r.provider.ListIntents(ctx, o.CreatedAt.Add(-time.Minute), func(intents []provider.Intent) error {
		p.rep.ProviderRequests++
		for _, pi := range intents { // newest first
			if pi.Metadata["order_id"] != o.ID || pi.Metadata["tenant"] != o.Tenant {
				continue
			}
			if pi.Status == "succeeded" {
				found = pi.ID
				return errStop
			}
			if found == "" {
				found = pi.ID
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return "", fmt.Errorf("list the intents since order %s: %w", o.ID, err)
	}
	return found, nil
}

// errStop ends a list early: what it looked for is found.
var errStop = errors.New("found")

// workflowless reads the orders unsettled for longer than the grace before now and
// returns how many it read and those whose workflow is not running. An order
// whose workflow cannot be described is given to unchecked, and left out unless
// it returns an error.
func (r *Reconciler) workflowless(ctx context.Context, now time.Time, unchecked func(orderstore.Unsettled, error) error) (int, []orderstore.Unsettled, error) {
	open, err := r.orders.Unsettled(ctx, now.Add(-r.opts.Grace), maxUnsettled)
	if err != nil {
		return 0, nil, fmt.Errorf("read unsettled orders: %w", err)
	}
	var closed []orderstore.Unsettled
	for _, o := range open {
		running, err := r.engine.Running(ctx, o.WorkflowID)
		if err != nil {
			if err := unchecked(o, fmt.Errorf("describe workflow %s: %w", o.WorkflowID, err)); err != nil {
				return 0, nil, err
			}
			continue
		}
		if !running {
			closed = append(closed, o)
		}
	}
	return len(open), closed, nil
}

// workflowClosed is the finding of an unsettled order whose workflow is not running.
func workflowClosed(o orderstore.Unsettled) Finding {
	return Finding{Kind: KindWorkflowClosed, OrderID: o.ID, Tenant: o.Tenant, Amount: o.Amount, Currency: o.Currency,
		Detail: "the order was " + string(o.Status) + " with no running workflow"}
}
