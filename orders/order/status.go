package order

// Status is an order's state in the read model and in the workflow.
type Status string

const (
	StatusPending        Status = "PENDING"
	StatusPaymentPending Status = "PAYMENT_PENDING" // a charge was sent; its outcome is not known yet
	StatusPaymentUnknown Status = "PAYMENT_UNKNOWN" // the charge's answer was lost; being reconciled by lookup
	// StatusActionRequired: the provider asks the customer to authenticate (3-D
	// Secure); the order shows where to send them, and settles when the intent does.
	StatusActionRequired  Status = "PAYMENT_ACTION_REQUIRED"
	StatusPaid            Status = "PAID"
	StatusPaymentDeclined Status = "PAYMENT_DECLINED"
	StatusCancelled       Status = "CANCELLED"
	StatusFailed          Status = "FAILED" // failed for good after the charge; refunded
	// After the payment, what was done to it at the provider: a refund request's
	// refund, a refund from the dashboard or a support tool (in part:
	// amount_refunded says how much), or a dispute by the cardholder's bank (lost:
	// REFUNDED). The order's own refunds (its cancel's, its failure's) end it
	// CANCELLED or FAILED instead.
	StatusPartiallyRefunded Status = "PARTIALLY_REFUNDED"
	StatusRefunded          Status = "REFUNDED"
	StatusDisputed          Status = "DISPUTED"
)

// Statuses lists every status, in the order of the state machine.
var Statuses = []Status{StatusPending, StatusPaymentPending, StatusPaymentUnknown, StatusActionRequired, StatusPaid, StatusPaymentDeclined, StatusCancelled, StatusFailed,
	StatusPartiallyRefunded, StatusRefunded, StatusDisputed}

// transitions is the order's state machine: the statuses each status may move to.
// The order store checks every status change against it (orderstore.Move, which
// the workflow's steps go through); a terminal status has no way out.
var transitions = map[Status][]Status{
	// PAYMENT_UNKNOWN straight from PENDING: the charge step failed for good before
	// it could record PAYMENT_PENDING (Postgres down), so only a lookup can tell.
	StatusPending:        {StatusPaymentPending, StatusPaymentUnknown, StatusPaid, StatusPaymentDeclined, StatusCancelled, StatusFailed},
	StatusPaymentPending: {StatusPaymentUnknown, StatusActionRequired, StatusPaid, StatusPaymentDeclined, StatusCancelled, StatusFailed},
	// Authenticated: paid, declined, or processing again (PAYMENT_PENDING); not
	// authenticated in time, or cancelled meanwhile: the intent is cancelled.
	StatusActionRequired: {StatusPaymentPending, StatusPaid, StatusPaymentDeclined, StatusCancelled, StatusFailed},
	// Reconciled: found charged (PAID), or found not charged and charged again with
	// the next key (PAYMENT_PENDING); never FAILED on a guess.
	StatusPaymentUnknown: {StatusPaymentPending, StatusPaid, StatusPaymentDeclined, StatusCancelled, StatusFailed},
	// CANCELLED and FAILED refund first; the others follow the provider.
	StatusPaid: {StatusCancelled, StatusFailed, StatusPartiallyRefunded, StatusRefunded, StatusDisputed},
	// A cancel in the window refunds what is left; a dispute closes won (back to
	// where it was) or lost (REFUNDED).
	// A refund the provider fails later (even after it succeeded) gives its share
	// back: the order moves back to what is left refunded.
	StatusPartiallyRefunded: {StatusPaid, StatusRefunded, StatusDisputed, StatusCancelled, StatusFailed},
	StatusDisputed:          {StatusPaid, StatusPartiallyRefunded, StatusRefunded},
	// A cancel then refunds nothing, unless a refund failed meanwhile.
	StatusRefunded: {StatusPaid, StatusPartiallyRefunded, StatusCancelled, StatusFailed},
}

// BeforePayment returns the statuses of an order whose payment has not settled:
// those a payment moves to PAID.
func BeforePayment() []Status {
	var out []Status
	for _, from := range Sources(StatusPaid) {
		if !AfterPayment(from) {
			out = append(out, from)
		}
	}
	return out
}

// AfterPayment reports the statuses of a paid order that follow the provider:
// refunds and disputes made elsewhere move it among them.
func AfterPayment(s Status) bool {
	switch s {
	case StatusPaid, StatusPartiallyRefunded, StatusRefunded, StatusDisputed:
		return true
	}
	return false
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if v == s {
			return true
		}
	}
	return false
}

// Terminal reports whether no further transition can leave the status.
func (s Status) Terminal() bool { return s.Valid() && len(transitions[s]) == 0 }

// CanMove reports whether the state machine allows from -> to.
func CanMove(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Sources returns the statuses from which an order may move to to.
func Sources(to Status) []Status {
	var out []Status
	for _, from := range Statuses {
		if CanMove(from, to) {
			out = append(out, from)
		}
	}
	return out
}
