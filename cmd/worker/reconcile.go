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

	"github.com/orderflow/orderflow/internal/platform/cli"
	"github.com/orderflow/orderflow/internal/platform/config"
	"github.com/orderflow/orderflow/internal/platform/database"
	"github.com/orderflow/orderflow/internal/reconcile"
)

// maxReport bounds the findings one report prints.
const maxReport = 10000

// reconcileReportCommand is `worker reconcile report [--since D]`.
func reconcileReportCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var since time.Duration
	return cli.Command{Name: "reconcile report", Args: "[--since D]",
		Summary: "print the discrepancies the reconciler found and what it did about each (DATABASE_URL)",
		Flags: func(fs *flag.FlagSet) {
			fs.DurationVar(&since, "since", 24*time.Hour, "how far back to print")
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() > 0 || since <= 0 {
				return cli.Usagef("want a positive --since and no argument")
			}
			return reconcileReport(ctx, getenv, time.Now().Add(-since), stdout)
		}}
}

func reconcileReport(ctx context.Context, getenv func(string) string, since time.Time, stdout io.Writer) error {
	e := config.New(getenv)
	url := e.Required("DATABASE_URL")
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	pool, err := database.Open(ctx, url, 2, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	found, err := reconcile.NewStore(pool).Since(ctx, since, maxReport)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FOUND\tKIND\tACTION\tTENANT\tORDER\tPROVIDER\tAMOUNT\tDETAIL")
	byKind := map[string]int{}
	for _, f := range found {
		byKind[f.Kind+" "+f.Action]++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d %s\t%s\n", f.FoundAt.UTC().Format(time.RFC3339), f.Kind, f.Action,
			dash(f.Tenant), dash(f.OrderID), dash(f.ProviderID), f.Amount, f.Currency, f.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d discrepancies since %s", len(found), since.UTC().Format(time.RFC3339))
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		fmt.Fprintf(stdout, "; %s: %d", k, byKind[k])
	}
	fmt.Fprintln(stdout)
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
