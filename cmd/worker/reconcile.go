package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/database"
)

// maxReport bounds the findings one report prints.
const maxReport = 10000

// reconcileReportCommand is `worker reconcile report [--since D] [-o json]`.
func reconcileReportCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var since time.Duration
	var out cli.Format
	return cli.Command{Name: "reconcile report", Args: "[--since D] [-o json]",
		Summary: "print the discrepancies the reconciler found and what it did about each (DATABASE_URL)",
		Flags: func(fs *flag.FlagSet) {
			fs.DurationVar(&since, "since", 24*time.Hour, "how far back to print")
			cli.OutputFlag(fs, &out)
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() > 0 || since <= 0 {
				return cli.Usagef("want a positive --since and no argument")
			}
			return reconcileReport(ctx, getenv, time.Now().Add(-since), out, stdout)
		}}
}

func reconcileReport(ctx context.Context, getenv func(string) string, since time.Time, out cli.Format, stdout io.Writer) error {
	pool, err := openDatabase(ctx, getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	found, err := reconcile.NewStore(pool).Since(ctx, since, maxReport)
	if err != nil {
		return err
	}
	if out == cli.JSON {
		return cli.WriteJSON(stdout, findingsJSON(found))
	}
	if err := findingsTable(stdout, found); err != nil {
		return err
	}
	byKind := map[string]int{}
	for _, f := range found {
		byKind[f.Kind+" "+f.Action]++
	}
	fmt.Fprintf(stdout, "%d discrepancies since %s", len(found), stamp(since))
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		fmt.Fprintf(stdout, "; %s: %d", k, byKind[k])
	}
	fmt.Fprintln(stdout)
	return nil
}

// openDatabase opens a small pool on DATABASE_URL, the only setting the
// database's commands read.
func openDatabase(ctx context.Context, getenv func(string) string) (*pgxpool.Pool, error) {
	e := config.New(getenv)
	url := e.Required("DATABASE_URL")
	if err := e.Err(); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return database.Open(ctx, url, 2, nil)
}

// findingsTable prints findings one a line.
func findingsTable(w io.Writer, found []reconcile.Finding) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFOUND\tKIND\tACTION\tTENANT\tORDER\tPROVIDER\tAMOUNT\tACKED\tDETAIL")
	for _, f := range found {
		acked := "-"
		if f.AckedAt != nil {
			acked = stamp(*f.AckedAt) + " by " + f.AckedBy
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d %s\t%s\t%s\n", f.ID, stamp(f.FoundAt), f.Kind, f.Action,
			dash(f.Tenant), dash(f.OrderID), dash(f.ProviderID), f.Amount, f.Currency, acked, f.Detail)
	}
	return tw.Flush()
}

// findingJSON is a finding as -o json prints it.
type findingJSON struct {
	ID         int64     `json:"id"`
	FoundAt    time.Time `json:"found_at"`
	Kind       string    `json:"kind"`
	Action     string    `json:"action"`
	Tenant     string    `json:"tenant"`
	OrderID    string    `json:"order_id"`
	ProviderID string    `json:"provider_id"`
	Amount     int64     `json:"amount"`
	Currency   string    `json:"currency"`
	Detail     string    `json:"detail"`
	// The acknowledgement: null and "" while the finding is open.
	AckedAt *time.Time `json:"acknowledged_at"`
	AckedBy string     `json:"acknowledged_by"`
	AckNote string     `json:"ack_note"`
}

func findingsJSON(found []reconcile.Finding) []findingJSON {
	out := make([]findingJSON, 0, len(found))
	for _, f := range found {
		out = append(out, findingJSON{ID: f.ID, FoundAt: f.FoundAt.UTC(), Kind: f.Kind, Action: f.Action, Tenant: f.Tenant,
			OrderID: f.OrderID, ProviderID: f.ProviderID, Amount: f.Amount, Currency: f.Currency, Detail: f.Detail,
			AckedAt: utc(f.AckedAt), AckedBy: f.AckedBy, AckNote: f.AckNote})
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
