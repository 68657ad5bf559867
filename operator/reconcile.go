package operator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/cli"
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
