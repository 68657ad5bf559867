package operator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/orderflow/orderflow/tenants"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/database"
)

// maxShown bounds the refunds and findings shown of one order.
const maxShown = 1000

// ordersShowCommand is `worker orders show ID|KEY [--tenant T] [-o json]`.
func ordersShowCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var tenant string
	var out cli.Format
	return cli.Command{Name: "orders show", Args: "ID|KEY [--tenant T] [-o json]",
		Summary: "show an order by ID, or by Idempotency-Key or eventId (every tenant's unless --tenant), with its payments, refunds, findings and workflow " +
			"(DATABASE_URL, PAYLOAD_KEYS to open its customer's ID, TEMPORAL_UI_URL, TEMPORAL_NAMESPACE)",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&tenant, "tenant", "", "only this tenant's order (a key is per tenant)")
			cli.OutputFlag(fs, &out)
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			args, err := positional(fs)
			if err != nil {
				return err
			}
			if len(args) != 1 || args[0] == "" {
				return cli.Usagef("want one order ID or key")
			}
			if tenant != "" && !tenants.Valid(tenant) {
				return cli.Usagef("--tenant %q is not a tenant name", tenant)
			}
			return ordersShow(ctx, getenv, args[0], tenant, out, stdout)
		}}
}

// orderView is an order as orders show prints it: what the API shows of it, and
// what only an operator sees (its tenant, workflow, payments and findings). Its
// customer ID is opened ("[erased]" once the customer is, "[sealed]" without
// PAYLOAD_KEYS), never the sealed value.
type orderView struct {
	Tenant         string        `json:"tenant"`
	ID             string        `json:"id"`
	Status         string        `json:"status"`
	CustomerID     string        `json:"customer_id"`
	Currency       string        `json:"currency"`
	Amount         int64         `json:"amount"`
	AmountRefunded int64         `json:"amount_refunded"`
	Items          []order.Item  `json:"items"`
	PaymentRef     string        `json:"payment_ref"`
	Failure        string        `json:"failure"`
	Dispute        string        `json:"dispute"`
	CreatedAt      time.Time     `json:"created_at"`
	UpdatedAt      time.Time     `json:"updated_at"`
	WorkflowID     string        `json:"workflow_id"`
	WorkflowURL    string        `json:"workflow_url,omitempty"`
	Payments       []paymentView `json:"payments"`
	Refunds        []refundView  `json:"refunds"`
	Findings       []findingJSON `json:"findings"`
}

// paymentView is one provider call of the order: never its idempotency key.
type paymentView struct {
	Kind       string    `json:"kind"`
	Status     string    `json:"status"`
	Amount     int64     `json:"amount"`
	Currency   string    `json:"currency"`
	ProviderID string    `json:"provider_id"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// refundView is one refund request: never its provider key or fingerprint.
type refundView struct {
	ID               string    `json:"id"`
	Status           string    `json:"status"`
	AmountRequested  int64     `json:"amount_requested"`
	Amount           int64     `json:"amount"`
	Currency         string    `json:"currency"`
	Reason           string    `json:"reason"`
	Failure          string    `json:"failure"`
	ProviderRefundID string    `json:"provider_refund_id"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// temporalUI links a workflow in Temporal's Web UI; "" without TEMPORAL_UI_URL.
type temporalUI struct{ base, namespace string }

func (u temporalUI) link(workflowID string) string {
	if u.base == "" {
		return ""
	}
	return strings.TrimRight(u.base, "/") + "/namespaces/" + url.PathEscape(u.namespace) + "/workflows/" + url.PathEscape(workflowID)
}

func ordersShow(ctx context.Context, getenv func(string) string, ref, tenant string, out cli.Format, stdout io.Writer) error {
	e := config.New(getenv)
	dsn, keys := e.Required("DATABASE_URL"), e.String("PAYLOAD_KEYS", "")
	ui := temporalUI{base: e.String("TEMPORAL_UI_URL", ""), namespace: e.String("TEMPORAL_NAMESPACE", "default")}
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	pool, err := database.Open(ctx, dsn, 2, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	var customers customerIDs = sealedIDs{}
	if keys != "" {
		if customers, err = customerKeys(ctx, pool, keys); err != nil {
			return err
		}
	}
	found, err := locate(ctx, pool, ref, tenant)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		if tenant != "" {
			return fmt.Errorf("no order with ID or key %q for tenant %s", ref, tenant)
		}
		return fmt.Errorf("no order with ID or key %q in any tenant", ref)
	}
	views := make([]orderView, 0, len(found))
	for _, l := range found {
		v, err := viewOf(ctx, pool, customers, l, ui)
		if err != nil {
			return err
		}
		views = append(views, v)
	}
	if out == cli.JSON {
		return cli.WriteJSON(stdout, views)
	}
	return ordersTable(stdout, views)
}

// locate finds the orders ref names: an order ID, or a key (an HTTP
// Idempotency-Key or an eventId) of tenant, or of every tenant with orders.
func locate(ctx context.Context, pool *pgxpool.Pool, ref, tenant string) ([]orderstore.Located, error) {
	store := orderstore.New(pool)
	tenants := []string{tenant}
	if tenant == "" {
		var err error
		if tenants, err = store.TenantNames(ctx); err != nil {
			return nil, err
		}
	}
	workflows := make([]string, 0, 2*len(tenants))
	for _, t := range tenants {
		workflows = append(workflows, order.WorkflowID(t, order.FromHTTP, ref), order.WorkflowID(t, order.FromEvent, ref))
	}
	found, err := store.Locate(ctx, ref, workflows)
	if err != nil || tenant == "" {
		return found, err
	}
	mine := found[:0]
	for _, l := range found {
		if l.Tenant == tenant {
			mine = append(mine, l)
		}
	}
	return mine, nil
}
