-- +goose Up

-- The records of kinds that keep no table of their own (a team's kind): a row per
-- workflow, written by the ingress before its client hears of it and by the
-- workflow as it moves, read by GET and by the replay of a key whose answer is
-- not stored yet. body is the JSON a client reads.
CREATE TABLE IF NOT EXISTS kind_records (
    tenant      text        NOT NULL,
    kind        text        NOT NULL,
    id          text        NOT NULL,                 -- the kind's public ID
    workflow_id text        NOT NULL UNIQUE,
    status      text        NOT NULL,
    final       boolean     NOT NULL DEFAULT false,   -- the workflow has settled
    fingerprint bytea       NOT NULL,
    body        jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, id)
);
-- Retention prunes settled records oldest first.
CREATE INDEX IF NOT EXISTS kind_records_settled ON kind_records (updated_at) WHERE final;

-- +goose Down
DROP TABLE kind_records;
