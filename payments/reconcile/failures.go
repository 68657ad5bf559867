package reconcile

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/platform/redact"
)

// maxDetail bounds the error text a finding keeps.
const maxDetail = 500

// failed records that the repair or the read of one object failed: a finding of
// its kind with the action action_failed and the error's text, and the pass goes
// on with the other objects. Only an ended context (every later call would fail
// too, and the cursor must stay) or a finding that cannot be stored ends it.
func (r *Reconciler) failed(ctx context.Context, p *pass, f Finding, err error) error {
	if ctx.Err() != nil {
		return err
	}
	p.rep.Failed++
	f.Action, f.Detail = ActionFailed, failureText(err)
	if rerr := r.record(ctx, p, f); rerr != nil {
		return errors.Join(err, rerr)
	}
	return nil
}

// failureText is err's text for a finding: without what a thief would want (a
// provider's message can quote a customer or a token), and bounded.
func failureText(err error) string {
	s := redact.Secrets(err.Error())
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail], "") + "…"
	}
	return s
}

// providerFailed records a provider action on one object (created at created)
// that failed, and has a later pass try it again when that can help: the next
// pass lists the object again (nextCursor), and sends the same key, unless its
// answer was a saved 5xx, which the provider replays to that key for a day: then
// the next generation's key. A new key is safe for these actions: the provider
// never refunds more than a charge's unrefunded amount, a canceled intent refuses
// a second cancel, and the next pass reads the object first (a refund the lost
// answer made shows in the charge's refunded amount). An answer that refuses the
// request (a 4xx such as charge_disputed) is left to a person.
func (r *Reconciler) providerFailed(ctx context.Context, p *pass, f Finding, base string, created time.Time, err error) error {
	var perr *provider.Error
	answered := errors.As(err, &perr)
	switch {
	case answered && perr.Unknown():
		if gerr := r.findings.NewKeyGeneration(ctx, base, p.start); gerr != nil {
			return errors.Join(err, gerr)
		}
		p.rereadFrom(created)
	case !answered || perr.Retryable() || perr.Unauthorized():
		// No answer (a timeout, a dropped connection), or one that the same key
		// may yet turn: the same key again.
		p.rereadFrom(created)
	}
	return r.failed(ctx, p, f, err)
}

// key is the idempotency key of the action base names ("reconcile:refund:<charge>"):
// base itself, the key passes always sent, until an answer to it is lost for
// good; then base and when the generation that replaced it began.
func (r *Reconciler) key(ctx context.Context, base string) (string, error) {
	gen, err := r.findings.KeyGeneration(ctx, base)
	if err != nil || gen.IsZero() {
		return base, err
	}
	return base + ":" + strconv.FormatInt(gen.UnixMilli(), 10), nil
}

// done records the finding of an action that succeeded with key, and forgets a
// later generation of base's keys: the object needs no other.
func (r *Reconciler) done(ctx context.Context, p *pass, f Finding, base, key string) error {
	if err := r.record(ctx, p, f); err != nil {
		return err
	}
	if key == base {
		return nil
	}
	return r.findings.DropKeyGeneration(ctx, base)
}
