-- +goose NO TRANSACTION
-- +goose Up

-- A tenant's orders by customer, newest first (GET /v1/orders?customer_id=, an
-- erasure's search), built without locking orders; a build cut short leaves an
-- invalid index, dropped on the next attempt.
DROP INDEX CONCURRENTLY IF EXISTS orders_customer_hash;
CREATE INDEX CONCURRENTLY orders_customer_hash ON orders (tenant, customer_hash, created_at DESC)
    WHERE customer_hash IS NOT NULL;

-- +goose Down
DROP INDEX IF EXISTS orders_customer_hash;
