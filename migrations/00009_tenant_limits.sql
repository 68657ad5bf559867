-- +goose Up

-- Each tenant's request budget where it differs from the default (TENANT_RATE,
-- TENANT_BURST): set with `api limits set`, read by every API process and worker
-- every TENANT_LIMITS_REFRESH.
CREATE TABLE IF NOT EXISTS tenant_limits (
    tenant     text             PRIMARY KEY,
    rate       double precision NOT NULL CHECK (rate > 0),
    burst      int              NOT NULL CHECK (burst > 0),
    updated_at timestamptz      NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE tenant_limits;
