-- +goose Up

-- One PaymentIntent per order: its creation is a row of kind 'intent' (status
-- created once the provider answered with it), its confirmation the 'charge' row,
-- its refunds 'refund' rows; each names the intent. A refund made at the provider
-- by someone else is recorded when a refund of ours finds it, under the key
-- 'provider:' || its ID, so the ledger nets what the provider holds.
ALTER TABLE payments DROP CONSTRAINT payments_kind_check;
ALTER TABLE payments ADD CONSTRAINT payments_kind_check CHECK (kind IN ('charge', 'refund', 'intent'));
ALTER TABLE payments ADD COLUMN intent_id text;
CREATE INDEX payments_intent ON payments (intent_id) WHERE intent_id IS NOT NULL;
COMMENT ON COLUMN payments.status IS 'pending | created (intents) | succeeded | declined | rejected | unknown | absent';

-- +goose Down
DROP INDEX payments_intent;
ALTER TABLE payments DROP COLUMN intent_id;
DELETE FROM payments WHERE kind = 'intent';
ALTER TABLE payments DROP CONSTRAINT payments_kind_check;
ALTER TABLE payments ADD CONSTRAINT payments_kind_check CHECK (kind IN ('charge', 'refund'));
