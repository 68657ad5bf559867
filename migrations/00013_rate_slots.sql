-- +goose Up

-- The budgets that hold across the fleet (the provider account's rate, each
-- tenant's request budget): per budget, the moment its next request is due
-- (GCRA's theoretical arrival time). Every process takes its requests from the
-- same row, so a budget is one whatever the number of processes. every is the
-- interval the due time moves by: a budget whose rate changed starts again.
CREATE TABLE IF NOT EXISTS rate_slots (
    name  text        PRIMARY KEY,
    due   timestamptz NOT NULL,
    every interval    NOT NULL
);

-- +goose Down
DROP TABLE rate_slots;
