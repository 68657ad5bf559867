-- +goose NO TRANSACTION
-- +goose Up

-- paid_at: when the order was first recorded PAID; a run that pays it again (a
-- reset, a recovery) anchors the cancel window here, never at its own start. Rows
-- paid before it existed read their last change instead (a PAID order's is that
-- move). amount_refunded: what others refunded of a paid order at the provider
-- (PARTIALLY_REFUNDED, REFUNDED); NULL for none.
--
-- Adding a nullable column changes metadata only, but under a lock that waits for
-- the statements in flight and holds back those that come after it. Each attempt
-- waits at most 10 ms, then lets the traffic through and tries again.
-- +goose StatementBegin
DO $$
BEGIN
    FOR attempt IN 1..500 LOOP
        BEGIN
            SET LOCAL lock_timeout = '10ms';
            ALTER TABLE orders ADD COLUMN IF NOT EXISTS paid_at timestamptz,
                               ADD COLUMN IF NOT EXISTS amount_refunded bigint;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_sleep(0.05);
        END;
    END LOOP;
    RAISE EXCEPTION 'orders stayed busy: the columns were not added';
END
$$;
-- +goose StatementEnd

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
