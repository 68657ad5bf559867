package operator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/cli"
)

// findingsListCommand is `worker findings list [--since D] [--open] [--kind K] [-o json]`.
func findingsListCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var since time.Duration
	var open bool
	var kind string
	var out cli.Format
	return cli.Command{Name: "findings list", Args: "[--since D] [--open] [--kind K] [-o json]",
		Summary: "list the reconciler's findings, the open ones (not acknowledged) with --open (DATABASE_URL)",
		Flags: func(fs *flag.FlagSet) {
			fs.DurationVar(&since, "since", 7*24*time.Hour, "how far back to list")
			fs.BoolVar(&open, "open", false, "only the findings nobody acknowledged")
			fs.StringVar(&kind, "kind", "", "only findings of this kind (e.g. refund_elsewhere)")
			cli.OutputFlag(fs, &out)
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() > 0 || since <= 0 {
				return cli.Usagef("want a positive --since and no argument")
			}
			f := reconcile.Filter{Since: time.Now().Add(-since), Open: open, Kind: kind, Limit: maxReport}
			return findingsList(ctx, getenv, f, out, stdout)
		}}
}

func findingsList(ctx context.Context, getenv func(string) string, f reconcile.Filter, out cli.Format, stdout io.Writer) error {
	pool, err := openDatabase(ctx, getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	found, err := reconcile.NewStore(pool).List(ctx, f)
	if err != nil {
		return err
	}
	if out == cli.JSON {
		return cli.WriteJSON(stdout, findingsJSON(found))
	}
	if err := findingsTable(stdout, found); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%d findings since %s\n", len(found), stamp(f.Since))
	return err
}

// findingsAckCommand is `worker findings ack ID... --by NAME [--note TEXT]`.
func findingsAckCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var by, note string
	return cli.Command{Name: "findings ack", Args: "ID... --by NAME [--note TEXT]",
		Summary: "acknowledge findings by ID (as findings list shows them), all or none (DATABASE_URL)",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&by, "by", "", "who acknowledges (required)")
			fs.StringVar(&note, "note", "", "why, or what was done")
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			args, err := positional(fs)
			if err != nil {
				return err
			}
			ids, err := findingIDs(args)
			if err != nil {
				return err
			}
			if strings.TrimSpace(by) == "" {
				return cli.Usagef("want --by NAME")
			}
			return findingsAck(ctx, getenv, ids, by, note, stdout)
		}}
}

// findingIDs parses the IDs of findings ack: flags may follow them.
func findingIDs(args []string) ([]int64, error) {
	if len(args) == 0 {
		return nil, cli.Usagef("want at least one finding ID")
	}
	ids := make([]int64, 0, len(args))
	for _, a := range args {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id <= 0 {
			return nil, cli.Usagef("%q is not a finding ID (a positive number, as findings list shows)", a)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func findingsAck(ctx context.Context, getenv func(string) string, ids []int64, by, note string, stdout io.Writer) error {
	pool, err := openDatabase(ctx, getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	acks, err := reconcile.NewStore(pool).Acknowledge(ctx, ids, by, note)
	if err != nil {
		return err
	}
	for _, a := range acks {
		if a.Already {
			fmt.Fprintf(stdout, "finding %d: already acknowledged %s by %s; left as it was\n", a.ID, stamp(a.AckedAt), a.AckedBy)
			continue
		}
		fmt.Fprintf(stdout, "finding %d: acknowledged by %s\n", a.ID, a.AckedBy)
	}
	return nil
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
