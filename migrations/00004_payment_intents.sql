-- +goose NO TRANSACTION
-- +goose Up

-- One PaymentIntent per order: its creation is a row of kind 'intent' (status
-- created once the provider answered with it), its confirmation the 'charge' row,
-- its refunds 'refund' rows; each names the intent. A refund made at the provider
-- by someone else is recorded when a refund of ours finds it, under the key
-- 'provider:' || its ID, so the ledger nets what the provider holds.
--
-- The wider check replaces the old one in one transaction, NOT VALID (no scan under
-- the lock); it is validated after, under a lock that lets writes through.
-- +goose StatementBegin
BEGIN;
ALTER TABLE payments DROP CONSTRAINT payments_kind_check;
ALTER TABLE payments ADD CONSTRAINT payments_kind_check CHECK (kind IN ('charge', 'refund', 'intent')) NOT VALID;
ALTER TABLE payments ADD COLUMN IF NOT EXISTS intent_id text;
COMMIT;
-- +goose StatementEnd
ALTER TABLE payments VALIDATE CONSTRAINT payments_kind_check;
DROP INDEX CONCURRENTLY IF EXISTS payments_intent;
CREATE INDEX CONCURRENTLY payments_intent ON payments (intent_id) WHERE intent_id IS NOT NULL;
COMMENT ON COLUMN payments.status IS 'pending | created (intents) | succeeded | declined | rejected | unknown | absent';

-- +goose Down
DROP INDEX payments_intent;
ALTER TABLE payments DROP COLUMN intent_id;
DELETE FROM payments WHERE kind = 'intent';
ALTER TABLE payments DROP CONSTRAINT payments_kind_check;
ALTER TABLE payments ADD CONSTRAINT payments_kind_check CHECK (kind IN ('charge', 'refund'));
