package operator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/operator/repair"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/database"
)

// ordersRepairCommand is `worker orders repair --query Q --reset-to first|last
// [--rate N] [--dry-run] [--reason TEXT] [-o json]`.
func ordersRepairCommand(getenv func(string) string, stdout, stderr io.Writer) cli.Command {
	var o repair.Options
	var resetTo string
	var out cli.Format
	return cli.Command{Name: "orders repair", Args: "--query Q --reset-to first|last [--rate N] [--dry-run] [--reason TEXT] [-o json]",
		Summary: "reset the current run of each workflow the query lists that closed without completing (failed, terminated, timed out), " +
			"at a rate; what cannot be reset becomes a repair_failed finding (TEMPORAL_*, DATABASE_URL unless --dry-run)",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.Query, "query", "", "visibility query of the runs to repair, e.g. \"WorkflowType = 'Order' AND ExecutionStatus = 'Failed' AND CloseTime > '2026-01-02T15:00:00Z'\" (required)")
			fs.StringVar(&resetTo, "reset-to", "", "first: re-run from the first workflow task; last: re-run the last completed one (required)")
			fs.Float64Var(&o.Rate, "rate", repair.DefaultRate, "resets per second")
			fs.BoolVar(&o.DryRun, "dry-run", false, "list what would be reset, with the reset event, and change nothing")
			fs.StringVar(&o.Reason, "reason", "", "recorded with each reset (default \"orderflow repair\")")
			cli.OutputFlag(fs, &out)
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			o.ResetTo = repair.ResetTo(resetTo)
			switch {
			case fs.NArg() > 0:
				return cli.Usagef("unexpected argument %q", fs.Arg(0))
			case strings.TrimSpace(o.Query) == "":
				return cli.Usagef("want --query: an empty one would list every workflow")
			case o.ResetTo != repair.ResetFirst && o.ResetTo != repair.ResetLast:
				return cli.Usagef("want --reset-to first or last")
			case o.Rate <= 0:
				return cli.Usagef("want a positive --rate")
			}
			return ordersRepair(ctx, getenv, o, out, stdout, stderr)
		}}
}

func ordersRepair(ctx context.Context, getenv func(string) string, o repair.Options, out cli.Format, stdout, stderr io.Writer) error {
	e := config.New(getenv)
	conn := e.Temporal()
	dsn := ""
	if !o.DryRun {
		dsn = e.Required("DATABASE_URL") // where what cannot be reset is recorded
	}
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if !o.DryRun {
		pool, err := database.Open(ctx, dsn, 2, nil)
		if err != nil {
			return err
		}
		defer pool.Close()
		o.Findings = reconcile.NewStore(pool)
	}
	c, err := client.DialContext(ctx, conn)
	if err != nil {
		return fmt.Errorf("temporal at %s: %w", conn.HostPort, err)
	}
	defer c.Close()
	o.Progress = stderr
	r, err := repair.New(c, conn.Namespace, o)
	if err != nil {
		return err
	}
	return printRepair(ctx, r, out, stdout, stderr)
}

// printRepair runs r: a table prints a line as each run is handled, so a long
// repair shows where it is, then the summary; JSON prints the runs as one array,
// the summary going to stderr.
func printRepair(ctx context.Context, r *repair.Repair, out cli.Format, stdout, stderr io.Writer) error {
	var rows []repair.Outcome
	const line = "%-11s  %-10s  %11s  %-36s  %-36s  %s  %s\n"
	if out == cli.Table {
		fmt.Fprintf(stdout, line, "ACTION", "STATUS", "RESET-EVENT", "RUN", "NEW-RUN", "WORKFLOW", "REASON")
	}
	sum, err := r.Run(ctx, func(o repair.Outcome) {
		if out == cli.JSON {
			rows = append(rows, o)
			return
		}
		event := "-"
		if o.ResetEvent > 0 {
			event = strconv.FormatInt(o.ResetEvent, 10)
		}
		fmt.Fprintf(stdout, line, o.Action, o.Status, event, o.RunID, dash(o.NewRunID), o.WorkflowID, dash(o.Reason))
	})
	summary := stdout
	if out == cli.JSON {
		if jerr := cli.WriteJSON(stdout, rows); jerr != nil && err == nil {
			err = jerr
		}
		summary = stderr
	}
	fmt.Fprintf(summary, "repair: %s\n", sum)
	if err != nil {
		return err
	}
	if sum.Failed > 0 {
		return fmt.Errorf("%d runs could not be reset (worker findings list --kind %s)", sum.Failed, reconcile.KindRepairFailed)
	}
	return nil
}
