package sandbox

import "time"

// refundFailureReason is what the refund failure test cards' refunds fail with.
const refundFailureReason = "expired_or_canceled_card"

// refundFails reports the cards whose refunds fail some time after they were
// made. Stripe's test card 4000 0000 0000 5126 (pm_card_refundFail,
// tok_refundFail): the charge succeeds, its refund starts succeeded, then fails.
// The sandbox's own pm_card_sandbox_refundFailPending and
// tok_sandbox_refundFailPending (not Stripe's): the refund starts pending, then
// fails.
func refundFails(card string) (fails, pending bool) {
	switch card {
	case "pm_card_refundFail", "tok_refundFail":
		return true, false
	case "pm_card_sandbox_refundFailPending", "tok_sandbox_refundFailPending":
		return true, true
	}
	return false, false
}

// scheduleFailure fails the refund at at (at once if it has passed); the caller
// holds s.mu.
func (s *Server) scheduleFailure(id string, at time.Time) {
	s.failures = append(s.failures, time.AfterFunc(time.Until(at), func() { s.failRefund(id) }))
}

// failRefund fails a refund as the card's bank does: status failed with a
// failure_reason, the amount back on its charge as not refunded, and
// charge.refund.updated raised with the refund.
func (s *Server) failRefund(id string) {
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		return
	default:
	}
	s.failing.Add(1) // under s.mu, before Close can wait: it closes first
	defer s.failing.Done()
	var re *Refund
	for _, r := range s.refunds {
		if r.ID == id && !r.failAt.IsZero() {
			re = r
		}
	}
	if re == nil {
		s.mu.Unlock()
		return
	}
	re.Status, re.FailureReason, re.failAt = "failed", refundFailureReason, time.Time{}
	for _, c := range s.charges {
		if c.ID == re.Charge {
			c.AmountRefunded -= re.Amount
			c.Refunded = c.AmountRefunded == c.Amount
		}
	}
	s.emit("charge.refund.updated", *re)
	s.mu.Unlock()
	if err := s.commit(); err != nil {
		s.logger.Error("sandbox state not saved", "err", err)
	}
}
