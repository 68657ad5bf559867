package operator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow/operator/shadow"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/platform/temporalclient"
)

// shadowCommand is `worker shadow [--query Q] [--since D] [--limit N]
// [--per-tenant N] [-o json]`.
func shadowCommand(getenv func(string) string, stdout, stderr io.Writer, x Extra) cli.Command {
	var o shadow.Options
	var out cli.Format
	return cli.Command{Name: "shadow", Args: "[--query Q] [--since D] [--limit N] [--per-tenant N] [-o json]",
		Summary: "replay the running workflows and those closed lately against this build, and compare what each would charge: " +
			"keys, amounts, currencies, targets; exit 1 if any differs (TEMPORAL_*, PAYLOAD_KEYS)",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.Query, "query", "", "visibility query ANDed with the default selection, e.g. \"OrderflowTenant = 'acme'\"")
			fs.DurationVar(&o.Since, "since", 24*time.Hour, "closed runs closed within it (running ones always); 0 for running ones only")
			fs.IntVar(&o.Limit, "limit", 1000, "most histories checked; 0 for no limit")
			fs.IntVar(&o.PerTenant, "per-tenant", 0, "most histories of one tenant; 0 for no cap")
			cli.OutputFlag(fs, &out)
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() > 0 {
				return cli.Usagef("unexpected argument %q", fs.Arg(0))
			}
			if o.Since < 0 || o.Limit < 0 || o.PerTenant < 0 {
				return cli.Usagef("want --since, --limit and --per-tenant of 0 or more")
			}
			o.Progress = stderr
			return runShadow(ctx, getenv, o, x.register, out, stdout, stderr)
		}}
}

// runShadow reads only the Temporal connection, the task queue and the payload
// keys, never the database: it writes nothing. With TASK_QUEUE set (a worker's
// settings), it checks the runs of that queue: every run there is this build's
// to take, whatever its type, and the namespace's other applications are not.
func runShadow(ctx context.Context, getenv func(string) string, o shadow.Options, register func(sdkworker.WorkflowRegistry), out cli.Format, stdout, stderr io.Writer) error {
	e := config.New(getenv)
	conn, keys := e.Temporal(), e.Required("PAYLOAD_KEYS")
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if q := getenv("TASK_QUEUE"); q != "" {
		if strings.ContainsAny(q, `'"\`) {
			return fmt.Errorf("configuration: TASK_QUEUE %q: quotes and backslashes are not allowed", q)
		}
		o.Query = strings.TrimSpace("TaskQueue = '" + q + "' " + and(o.Query))
	}
	ring, err := payloadcodec.ParseKeyring(keys)
	if err != nil {
		return fmt.Errorf("configuration: PAYLOAD_KEYS: %w", err)
	}
	codec := payloadcodec.New(ring)
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := temporalclient.Dial(ctx, temporalclient.Settings{Connection: conn, Codec: codec, Logger: logger})
	if err != nil {
		return err
	}
	defer c.Close()
	dc, _ := payloadcodec.Converters(codec)
	s, err := shadow.New(c, conn.Namespace, dc, register, o)
	if err != nil {
		return err
	}
	return printShadow(ctx, s, out, stdout, stderr)
}

// printShadow runs s: a table prints each failure as it is found, then the
// summary; JSON prints the failures as one array, the summary going to stderr.
func printShadow(ctx context.Context, s *shadow.Shadow, out cli.Format, stdout, stderr io.Writer) error {
	var rows []shadow.Failure
	sum, err := s.Run(ctx, func(r shadow.Result) {
		for _, f := range r.Failures {
			if out == cli.JSON {
				rows = append(rows, f)
				continue
			}
			fmt.Fprintln(stdout, f)
		}
	})
	summary := stdout
	if out == cli.JSON {
		if jerr := cli.WriteJSON(stdout, rows); jerr != nil && err == nil {
			err = jerr
		}
		summary = stderr
	}
	fmt.Fprintln(summary, shadowSummary(sum))
	switch {
	case err != nil:
		return err
	case sum.Failed > 0:
		return fmt.Errorf("%d of %d histories fail on this build: do not roll it out", sum.Failed, sum.Checked)
	}
	return nil
}

// and is the operator's query ANDed to the queue's, if there is one.
func and(q string) string {
	if strings.TrimSpace(q) == "" {
		return ""
	}
	return "AND (" + q + ")"
}

// shadowSummary is the summary line of a check.
func shadowSummary(sum shadow.Summary) string {
	other := sum.Failed - sum.ByKind[shadow.Nondeterminism] - sum.ByKind[shadow.Effect]
	return fmt.Sprintf("shadow: checked %d histories (open %d, closed %d) in %s: %d failed (nondeterminism %d, effect %d, other %d)",
		sum.Checked, sum.Open, sum.Closed, sum.Took.Round(time.Millisecond), sum.Failed,
		sum.ByKind[shadow.Nondeterminism], sum.ByKind[shadow.Effect], other)
}
