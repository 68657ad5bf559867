-- +goose Up

-- The read model of every order; one row per workflow.
CREATE TABLE orders (
    id           text PRIMARY KEY,
    tenant       text        NOT NULL,
    workflow_id  text        NOT NULL UNIQUE,
    customer_id  text        NOT NULL,
    items        jsonb       NOT NULL,
    amount       bigint      NOT NULL CHECK (amount > 0), -- minor units
    currency     char(3)     NOT NULL,
    status       text        NOT NULL,
    payment_ref  text,
    failure      text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
-- Keyset pagination of a tenant's orders, newest first.
CREATE INDEX orders_tenant_created ON orders (tenant, created_at DESC, id DESC);

-- HTTP idempotency: one row per (tenant, Idempotency-Key), kept after the workflow
-- has left Temporal's retention.
CREATE TABLE idempotency_keys (
    tenant          text        NOT NULL,
    key             text        NOT NULL,
    fingerprint     bytea       NOT NULL,
    workflow_id     text        NOT NULL,
    response_status int,        -- NULL while the first request is in flight
    response_body   bytea,      -- replayed byte for byte
    locked_until    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);

-- Kafka dedup: one row per event a consumer group has turned into a workflow start.
CREATE TABLE processed_events (
    consumer_group text        NOT NULL,
    event_id       text        NOT NULL,
    tenant         text        NOT NULL,
    workflow_id    text        NOT NULL,
    processed_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, event_id)
);

-- Calls to the payment provider, keyed by the idempotency key sent with them.
CREATE TABLE payments (
    idempotency_key text PRIMARY KEY,
    order_id        text        NOT NULL REFERENCES orders (id),
    kind            text        NOT NULL CHECK (kind IN ('charge', 'refund')),
    amount          bigint      NOT NULL CHECK (amount > 0),
    currency        char(3)     NOT NULL,
    status          text        NOT NULL,
    provider_id     text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payments_order ON payments (order_id);

-- API keys: only a SHA-256 of the secret is stored; each key belongs to one tenant.
CREATE TABLE api_keys (
    id         text PRIMARY KEY,
    tenant     text        NOT NULL,
    key_hash   bytea       NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant);

-- +goose Down
DROP TABLE api_keys;
DROP TABLE payments;
DROP TABLE processed_events;
DROP TABLE idempotency_keys;
DROP TABLE orders;
