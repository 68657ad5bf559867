-- +goose Up

-- The tenants sharing a budget by weight (the provider account's): each tenant
-- that waited for it lately, with its weight. A tenant's share of the budget is
-- its weight over the weights of those seen within a few seconds, so the
-- fleet's processes split the budget by weight whichever of them hold whose
-- requests.
CREATE TABLE IF NOT EXISTS rate_tenants (
    budget text             NOT NULL,
    tenant text             NOT NULL,
    weight double precision NOT NULL CHECK (weight > 0),
    seen   timestamptz      NOT NULL,
    PRIMARY KEY (budget, tenant)
);

-- +goose Down
DROP TABLE rate_tenants;
