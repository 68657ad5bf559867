-- +goose NO TRANSACTION
-- +goose Up

-- The fingerprint of the request that made the order (version byte + SHA-256, see
-- order.Fingerprint), so a key reused after its idempotency record expired is told
-- apart from a retry of the same request. NULL: recorded before fingerprints.
ALTER TABLE orders ADD COLUMN IF NOT EXISTS fingerprint bytea;

-- Orders whose payment is not settled, for the PAYMENT_UNKNOWN gauge and operators.
DROP INDEX CONCURRENTLY IF EXISTS orders_payment_open;
CREATE INDEX CONCURRENTLY orders_payment_open ON orders (status, updated_at)
    WHERE status IN ('PAYMENT_PENDING', 'PAYMENT_UNKNOWN');

-- Payment rows: pending (sent, no answer yet), succeeded, declined, rejected (a
-- definite no), unknown (the answer was lost or a stored 5xx replays), absent (a
-- lookup found that this key charged nothing).
COMMENT ON COLUMN payments.status IS 'pending | succeeded | declined | rejected | unknown | absent';

-- +goose Down
DROP INDEX orders_payment_open;
ALTER TABLE orders DROP COLUMN fingerprint;
