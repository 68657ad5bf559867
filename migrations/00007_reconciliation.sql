-- +goose NO TRANSACTION
-- +goose Up

-- When the order was first recorded PAID: a run that pays it again (a reset, a
-- recovery) anchors the cancel window here, never at its own start. Rows paid
-- before it existed read their last change instead (a PAID order's is that move).
ALTER TABLE orders ADD COLUMN IF NOT EXISTS paid_at timestamptz;
-- What others refunded of a paid order at the provider (PARTIALLY_REFUNDED,
-- REFUNDED); NULL for none.
ALTER TABLE orders ADD COLUMN IF NOT EXISTS amount_refunded bigint;

-- The reconciler's finds: each discrepancy between the provider, the engine and the
-- ledger, and what was done about it.
CREATE TABLE IF NOT EXISTS reconcile_findings (
    id          bigserial PRIMARY KEY,
    found_at    timestamptz NOT NULL DEFAULT now(),
    kind        text        NOT NULL,
    action      text        NOT NULL,
    order_id    text,
    tenant      text,
    provider_id text,       -- the charge or intent at the provider
    amount      bigint,
    currency    char(3),
    detail      text        NOT NULL DEFAULT '',
    -- One finding per discrepancy: the same one seen again by a later pass is
    -- not a new one.
    UNIQUE NULLS NOT DISTINCT (kind, provider_id, order_id)
);
CREATE INDEX IF NOT EXISTS reconcile_findings_found ON reconcile_findings (found_at);

-- Where the provider side of the last pass stopped, so the next reads only what
-- was created or changed since.
CREATE TABLE IF NOT EXISTS reconcile_cursors (
    name       text PRIMARY KEY,
    since      timestamptz NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Orders whose payment has not settled, whatever their step: the engine side of a
-- pass reads them by age.
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_unsettled ON orders (updated_at)
    WHERE status IN ('PENDING', 'PAYMENT_PENDING', 'PAYMENT_UNKNOWN', 'PAYMENT_ACTION_REQUIRED');

-- +goose Down
DROP INDEX orders_unsettled;
DROP TABLE reconcile_cursors;
DROP TABLE reconcile_findings;
ALTER TABLE orders DROP COLUMN amount_refunded;
ALTER TABLE orders DROP COLUMN paid_at;
