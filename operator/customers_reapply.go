package operator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/orderflow/orderflow/customers/erasure"
	"github.com/orderflow/orderflow/customers/receipt"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/platform/records"
	"github.com/orderflow/orderflow/platform/temporalclient"
	"github.com/orderflow/orderflow/tenants"
)

// customersReapplyCommand is `worker customers reapply --since D|RFC3339
// [--tenant T] [--dry-run] [-o json]`.
func customersReapplyCommand(getenv func(string) string, stdout, stderr io.Writer) cli.Command {
	var since string
	var o reapplyOptions
	var out cli.Format
	return cli.Command{Name: "customers reapply", Args: "--since DURATION|RFC3339 [--tenant T] [--dry-run] [-o json]",
		Summary: "after PostgreSQL is restored from a backup, erase again each customer whose erasure completed since then: " +
			"destroy the keys the backup brought back, scrub their stored answers, put back the erasure's receipt; " +
			"a second run changes nothing (DATABASE_URL, PAYLOAD_KEYS, TEMPORAL_*)",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&since, "since", "", "the backup's time (RFC3339), or how long ago it was taken (36h); take it a little early (required)")
			fs.StringVar(&o.Tenant, "tenant", "", "only this tenant's erasures")
			fs.BoolVar(&o.DryRun, "dry-run", false, "list the erasures and what each would change, and change nothing")
			cli.OutputFlag(fs, &out)
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() > 0 {
				return cli.Usagef("unexpected argument %q", fs.Arg(0))
			}
			at, err := parseSince(since, time.Now())
			if err != nil {
				return err
			}
			if o.Tenant != "" && !tenants.Valid(o.Tenant) {
				return cli.Usagef("--tenant %q is not a tenant name", o.Tenant)
			}
			o.Since = at
			return runReapply(ctx, getenv, o, out, stdout, stderr)
		}}
}

// reapplyOptions select the erasures a reapply re-applies.
type reapplyOptions struct {
	Since  time.Time
	Tenant string
	DryRun bool
}

// parseSince reads --since: a time, or a duration back from now.
func parseSince(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, cli.Usagef("want --since: the time of the backup PostgreSQL was restored from")
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 {
			return time.Time{}, cli.Usagef("--since %s: want a positive duration", v)
		}
		return now.Add(-d), nil
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, cli.Usagef("--since %q: want a duration (36h) or an RFC3339 time", v)
	}
	if at.After(now) {
		return time.Time{}, cli.Usagef("--since %s is in the future", v)
	}
	return at, nil
}

// reapplyQuery lists the erasures that completed after o.Since: every workflow
// of the erasure kind (its search attribute, set on every kind's workflow at its
// start), whatever its Go function is called.
func reapplyQuery(o reapplyOptions) string {
	q := fmt.Sprintf("%s = '%s' AND ExecutionStatus = 'Completed' AND CloseTime > '%s'",
		identity.SearchKind, erasure.KindName, o.Since.UTC().Format(time.RFC3339))
	if o.Tenant != "" { // tenants.Valid: no quote to escape
		q += fmt.Sprintf(" AND %s = '%s'", identity.SearchTenant, o.Tenant)
	}
	return q
}

// runReapply reads the configuration, opens the database, the customer keys and
// Temporal, and re-applies.
func runReapply(ctx context.Context, getenv func(string) string, o reapplyOptions, out cli.Format, stdout, stderr io.Writer) error {
	e := config.New(getenv)
	dsn, keys, conn := e.Required("DATABASE_URL"), e.Required("PAYLOAD_KEYS"), e.Temporal()
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	ring, err := payloadcodec.ParseKeyring(keys)
	if err != nil {
		return fmt.Errorf("configuration: PAYLOAD_KEYS: %w", err)
	}
	codec := payloadcodec.New(ring)
	pool, err := database.Open(ctx, dsn, 2, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := custkeys.Open(ctx, pool, codec)
	if err != nil {
		return fmt.Errorf("customer keys: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := temporalclient.Dial(ctx, temporalclient.Settings{Connection: conn, Codec: codec, Logger: logger})
	if err != nil {
		return err
	}
	defer c.Close()
	dc, _ := payloadcodec.Converters(codec)
	runs := temporalErasures{c: c, namespace: conn.Namespace, dc: dc}
	data := dbErasures{db: pool, keys: store, acts: erasure.NewActivities(pool, store, records.NewStore(pool)), records: records.NewStore(pool)}
	return printReapply(ctx, runs, data, o, out, stdout, stderr)
}

// printReapply re-applies: a table prints a line as each erasure is handled, then
// the summary; JSON prints the erasures as one array, the summary going to stderr.
func printReapply(ctx context.Context, runs erasureRuns, data erasureData, o reapplyOptions, out cli.Format, stdout, stderr io.Writer) error {
	var rows []reapplied
	const line = "%-40s  %-24s  %-20s  %4s  %7s  %s\n"
	if out == cli.Table {
		fmt.Fprintf(stdout, line, "ERASURE", "TENANT", "CLOSED", "KEYS", "ANSWERS", "RECEIPT")
	}
	sum, err := reapply(ctx, runs, data, o, func(r reapplied) {
		if out == cli.JSON {
			rows = append(rows, r)
			return
		}
		receiptState := "kept"
		if r.Receipt {
			receiptState = "restored"
		}
		fmt.Fprintf(stdout, line, r.ID, r.Tenant, stamp(r.ClosedAt), fmt.Sprint(r.Keys), fmt.Sprint(r.Answers), receiptState)
	})
	summary := stdout
	if out == cli.JSON {
		if jerr := cli.WriteJSON(stdout, rows); jerr != nil && err == nil {
			err = jerr
		}
		summary = stderr
	}
	fmt.Fprintln(summary, sum.String(o))
	return err
}

// reapplied is one erasure as a reapply found it: what the restore had brought
// back, which this run erased again (or, in a dry run, would).
type reapplied struct {
	ID         string    `json:"id"`
	Tenant     string    `json:"tenant"`
	WorkflowID string    `json:"workflow_id"`
	ClosedAt   time.Time `json:"closed_at"`
	// Keys are the customer's keys that were live: each is destroyed again.
	Keys int64 `json:"keys_destroyed"`
	// Answers are the stored answers that held the customer's ID again.
	Answers int64 `json:"answers_scrubbed"`
	// Receipt is whether the erasure's record had lost its receipt.
	Receipt bool `json:"receipt_restored"`
	DryRun  bool `json:"dry_run"`
}

// reapplySummary counts a reapply.
type reapplySummary struct {
	Erasures, Keys, Answers, Receipts int64
}

func (s *reapplySummary) add(r reapplied) {
	s.Erasures++
	s.Keys += r.Keys
	s.Answers += r.Answers
	if r.Receipt {
		s.Receipts++
	}
}

func (s reapplySummary) String(o reapplyOptions) string {
	head := fmt.Sprintf("reapply: %d erasures completed since %s", s.Erasures, stamp(o.Since))
	if o.DryRun {
		return fmt.Sprintf("%s (dry run, nothing changed): would destroy %d keys again, scrub %d stored answers, restore %d receipts",
			head, s.Keys, s.Answers, s.Receipts)
	}
	out := fmt.Sprintf("%s re-applied: %d keys destroyed again, %d stored answers scrubbed, %d receipts restored",
		head, s.Keys, s.Answers, s.Receipts)
	if s.Keys > 0 {
		// As an erasure waits before it signs: a process that read a restored key
		// may keep it in its cache this long.
		out += fmt.Sprintf("; processes may keep a restored key up to %s more", custkeys.CacheTTL())
	}
	return out
}

// erasureRun is a completed erasure: its input and the receipt it answered.
type erasureRun struct {
	WorkflowID string
	ClosedAt   time.Time
	Input      erasure.Input
	Receipt    receipt.Signed
}

// erasureRuns are the erasure workflows Temporal keeps.
type erasureRuns interface {
	// Completed hands each run query lists to each, page by page, and stops at
	// each's first error.
	Completed(ctx context.Context, query string, each func(erasureRun) error) error
}

// pending is what a restore brought back of an erasure.
type pending struct {
	Keys, Answers int64
	Receipt       bool
}

// erasureData is what erasures erased, as the database holds it now.
type erasureData interface {
	// Pending is what would be erased again.
	Pending(ctx context.Context, r erasureRun) (pending, error)
	// Apply erases it again; every step is idempotent.
	Apply(ctx context.Context, r erasureRun) error
}

// reapply re-applies each erasure runs lists for o, and hands each to each.
func reapply(ctx context.Context, runs erasureRuns, data erasureData, o reapplyOptions, each func(reapplied)) (reapplySummary, error) {
	var sum reapplySummary
	err := runs.Completed(ctx, reapplyQuery(o), func(r erasureRun) error {
		in := r.Input
		if in.Tenant == "" || len(in.CustomerHash) == 0 || in.WorkflowID != r.WorkflowID {
			return fmt.Errorf("erasure %s: its input names no customer of a tenant, or another workflow", r.WorkflowID)
		}
		p, err := data.Pending(ctx, r)
		if err != nil {
			return fmt.Errorf("erasure %s: %w", in.ID, err)
		}
		if !o.DryRun {
			if err := data.Apply(ctx, r); err != nil {
				return fmt.Errorf("re-apply erasure %s: %w", in.ID, err)
			}
		}
		out := reapplied{ID: in.ID, Tenant: in.Tenant, WorkflowID: r.WorkflowID, ClosedAt: r.ClosedAt.UTC(),
			Keys: p.Keys, Answers: p.Answers, Receipt: p.Receipt, DryRun: o.DryRun}
		sum.add(out)
		each(out)
		return nil
	})
	return sum, err
}
