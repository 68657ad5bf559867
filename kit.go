// Package orderflow runs orderflow's API and worker with the kinds of workflow a
// team adds beside orders and refund requests, from the team's own module. Its
// main.go is one registration:
//
//	func main() { os.Exit(orderflow.Main(shipment.New())) }
//
// and its binary is both of orderflow's: `BINARY api ...` serves the HTTP API,
// `BINARY worker ...` runs the worker, every command and setting included
// (docs/configuration.md). A kind gets what orders get from the ingress and the
// platform without writing it again: keyed starts and their replay, 422 and
// 409, Prefer: wait, events and CloudEvents on the requests topic, the
// dead-letter queue and its tools, tenants, budgets, fairness, search
// attributes, payload encryption, traces and metrics, and the shadow gate.
package orderflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/httpapi"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/records"
)

// Kind is a kind of workflow a team adds.
type Kind interface {
	// Route is the kind's path under /v1 ("shipments"): POST starts one of its
	// workflows with an Idempotency-Key, GET /v1/{route}/{id} reads one.
	Route() string
	// Ingress is the kind as the ingresses start it (its Envelope names its
	// events' member and CloudEvent type on the requests topic).
	Ingress(p Platform) (ingress.Kind, error)
	// Workflows registers the kind's workflows: in a worker, and in the
	// replayer of `worker shadow`.
	Workflows(r sdkworker.WorkflowRegistry)
	// Activities are the kind's activities (structs whose methods are
	// activities, or functions), built on p when the worker starts.
	Activities(p Platform) ([]any, error)
}

// Platform is what a kind is built on, in the API and in the worker.
type Platform struct {
	Pool     *pgxpool.Pool
	Temporal client.Client
	// Starter starts the kind's workflows on the task queue, fair between
	// tenants, with the search attributes every kind's carry.
	Starter intake.Starter
	// Records is kind_records: a kind that keeps no table of its own records
	// its workflows there, and GET reads them.
	Records *records.Store
	Logger  *slog.Logger
	// Getenv reads the kind's own settings.
	Getenv func(string) string
	// Customers seals a customer's personal values under the customer's own
	// key (Seal, Reveal): an erasure destroys the key, and with it every value
	// a kind sealed, wherever the kind kept it.
	Customers *custkeys.Store
}

// Deleter is a kind that a DELETE also starts: DELETE /v1/{path}/{id} is a
// request of the kind whose member field is {id} (an erasure's customer_id).
type Deleter interface {
	Deletes() (path, field string)
}

// Viewer is a kind that reads its workflows by public ID itself (from a table
// of its own); a kind that is not one is read from kind_records.
type Viewer interface {
	ViewID(ctx context.Context, tenant, id string) (ingress.View, error)
}

// routes are the kinds' HTTP routes in the API.
func routes(kinds []Kind, p Platform) ([]httpapi.KindRoute, error) {
	var out []httpapi.KindRoute
	for _, k := range kinds {
		ik, err := k.Ingress(p)
		if err != nil {
			return nil, fmt.Errorf("kind at /v1/%s: %w", k.Route(), err)
		}
		get := recordsOf(p.Records)
		if v, ok := ik.(Viewer); ok {
			get = v.ViewID
		}
		r := httpapi.KindRoute{Path: k.Route(), Kind: ik, Get: get}
		if d, ok := k.(Deleter); ok {
			r.Deletes, r.DeleteField = d.Deletes()
		}
		out = append(out, r)
	}
	return out, nil
}

// recordsOf reads a kind's workflows from kind_records.
func recordsOf(s *records.Store) func(ctx context.Context, tenant, id string) (ingress.View, error) {
	return func(ctx context.Context, tenant, id string) (ingress.View, error) {
		r, err := s.Get(ctx, tenant, id)
		switch {
		case errors.Is(err, records.ErrNotFound):
			return ingress.View{}, intake.ErrNotFound
		case err != nil:
			return ingress.View{}, err
		}
		return view(r), nil
	}
}

// view is a record as the ingress answers it.
func view(r records.Record) ingress.View {
	return ingress.View{ID: r.ID, Body: r.Body, Final: r.Final, Fingerprint: r.Fingerprint}
}
