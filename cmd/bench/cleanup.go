package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/workflowservice/v1"
)

// leaveNothing ends what the run left in the stack, which make run shares: the
// open workflows of its task queue (terminated, once no worker runs them) and
// every row of its tenants (each tenant name carries the run's suffix), so the
// console and GET /v1/orders show none of them. It prints what is left.
func (b *bench) leaveNothing(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	for b.workerRuns() {
		b.stopWorker()
	}
	open := fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running'", b.queue)
	ended, err := b.terminate(ctx, open)
	if err != nil {
		return err
	}
	tenants, err := b.runTenants(ctx)
	if err != nil {
		return err
	}
	deleted, err := b.deleteRows(ctx, tenants)
	if err != nil {
		return err
	}
	var orders int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE tenant = ANY($1)`, tenants).Scan(&orders); err != nil {
		return fmt.Errorf("count orders: %w", err)
	}
	// Visibility follows the terminations within a few seconds.
	left := -1
	_ = b.poll(ctx, 30*time.Second, 500*time.Millisecond, func() bool {
		resp, err := b.tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: open})
		if err == nil {
			left = int(resp.GetCount())
		}
		return left == 0
	})
	fmt.Fprintf(b.out, "cleanup: %d open workflows terminated, %d rows of %d tenants deleted\nleft behind: %d orders, %d workflows\n",
		ended, deleted, len(tenants), orders, left)
	if orders != 0 || left != 0 {
		return fmt.Errorf("the run left %d orders and %d open workflows behind", orders, left)
	}
	return nil
}

// terminate ends every workflow query finds.
func (b *bench) terminate(ctx context.Context, query string) (int, error) {
	n := 0
	var token []byte
	for {
		page, err := b.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 500, NextPageToken: token})
		if err != nil {
			return n, fmt.Errorf("list %s: %w", query, err)
		}
		for _, e := range page.GetExecutions() {
			// Already closed since it was listed: nothing to end.
			if err := b.tc.TerminateWorkflow(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), "bench run ended"); err == nil {
				n++
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			return n, nil
		}
	}
}

// runTenants are the tenants this run made: each has an API key and carries
// the run's suffix.
func (b *bench) runTenants(ctx context.Context) ([]string, error) {
	rows, err := b.pool.Query(ctx, `SELECT DISTINCT tenant FROM api_keys WHERE tenant LIKE 'bench-%' AND strpos(tenant, $1) > 0`, b.run)
	if err != nil {
		return nil, fmt.Errorf("the run's tenants: %w", err)
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("the run's tenants: %w", err)
	}
	return tenants, nil
}

// deleteRows deletes the tenants' rows from every table that names a tenant,
// their orders' payments first (payments name the order only).
func (b *bench) deleteRows(ctx context.Context, tenants []string) (int64, error) {
	tag, err := b.pool.Exec(ctx, `DELETE FROM payments WHERE order_id IN (SELECT id FROM orders WHERE tenant = ANY($1))`, tenants)
	if err != nil {
		return 0, fmt.Errorf("delete payments: %w", err)
	}
	deleted := tag.RowsAffected()
	rows, err := b.pool.Query(ctx, `SELECT c.table_name FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
		WHERE c.table_schema = current_schema() AND c.column_name = 'tenant' AND c.table_name <> 'orders' ORDER BY 1`)
	if err != nil {
		return deleted, fmt.Errorf("tables: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return deleted, fmt.Errorf("tables: %w", err)
	}
	// Orders last: the rows that point at them go first.
	for _, t := range append(tables, "orders") {
		tag, err := b.pool.Exec(ctx, `DELETE FROM `+pgx.Identifier{t}.Sanitize()+` WHERE tenant = ANY($1)`, tenants)
		if err != nil {
			return deleted, fmt.Errorf("delete from %s: %w", t, err)
		}
		deleted += tag.RowsAffected()
	}
	return deleted, nil
}
