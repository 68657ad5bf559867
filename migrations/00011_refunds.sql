-- +goose Up

-- Refund requests: a client's request to give back some or all of what a paid
-- order charged, one row per refund workflow. A row holds a reservation of the
-- order's charge once amount is set while it is PENDING, and for good once it is
-- SUCCEEDED; a FAILED row holds nothing (its amount stays for the record). The
-- reservations of one order are taken one at a time, under an advisory lock on
-- the order's ID, never under the orders row's own lock.
CREATE TABLE IF NOT EXISTS refunds (
    id                 text PRIMARY KEY,                -- the public rfd_ ID
    tenant             text        NOT NULL,
    workflow_id        text        NOT NULL UNIQUE,
    order_id           text        NOT NULL,
    amount_requested   bigint      NOT NULL CHECK (amount_requested >= 0), -- 0: what is left
    amount             bigint      CHECK (amount > 0), -- reserved, then refunded; NULL until reserved
    currency           text,
    reason             text,
    status             text        NOT NULL CHECK (status IN ('PENDING', 'SUCCEEDED', 'FAILED')),
    failure            text,
    provider_refund_id text,
    refund_key         text,                            -- the provider idempotency key last sent
    fingerprint        bytea,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
-- An order's refunds, newest first (keyset pagination), and the reservations a
-- new one is weighed against.
CREATE INDEX IF NOT EXISTS refunds_order ON refunds (tenant, order_id, created_at, id);

-- +goose Down
DROP TABLE refunds;
