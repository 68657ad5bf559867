package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/platform/telemetry"
	"github.com/orderflow/orderflow/settings"
)

// dlqListCommand is `worker dlq list [letters] [-o json]`: each dead letter's
// provenance, failure and whom it speaks for (tenant, kind, eventId), never its
// value, which may hold a card token.
func dlqListCommand(getenv func(string) string, stdout io.Writer, x Extra) cli.Command {
	var out cli.Format
	sel := letterFlags{x: x}
	return cli.Command{Name: "dlq list", Args: "[--id ID... | --tenant T --kind K --event-id ID... [--source S]] [-o json]",
		Summary: "list the dead letters: whose each is, where it came from and why it failed, not what it holds (KAFKA_*, DLQ_TOPIC, PAYLOAD_KEYS)",
		Flags: func(fs *flag.FlagSet) {
			cli.OutputFlag(fs, &out)
			sel.register(fs, "list")
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() > 0 {
				return cli.Usagef("unexpected argument %q", fs.Arg(0))
			}
			selectors, err := sel.selectors()
			if err != nil {
				return err
			}
			return dlqList(ctx, getenv, selectors, x.letters(), out, stdout)
		}}
}

func dlqList(ctx context.Context, getenv func(string) string, sel []consumer.Selector, kinds consumer.KindNames, out cli.Format, stdout io.Writer) error {
	e := config.New(getenv)
	cluster, keys := e.Kafka(), e.Required("PAYLOAD_KEYS")
	_, _, dlq := settings.Topics(e)
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	ring, err := payloadcodec.ParseKeyring(keys)
	if err != nil {
		return fmt.Errorf("configuration: PAYLOAD_KEYS: %w", err)
	}
	codec := payloadcodec.New(ring)
	var letters []consumer.LetterInfo
	err = consumer.Letters(ctx, cluster, dlq, func(m kafka.Message, _ int64) error {
		li, err := consumer.Identify(m, codec, kinds)
		if err == nil && picked(sel, li.Identity) {
			letters = append(letters, li)
		}
		return err
	})
	if err != nil {
		return err
	}
	if out == cli.JSON {
		return cli.WriteJSON(stdout, letters)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LETTER\tTENANT\tKIND\tEVENT\tDEAD-LETTERED\tFROM\tGROUP\tBYTES\tERROR\tID")
	for _, l := range letters {
		size := strconv.Itoa(l.Bytes)
		if !l.Whole {
			size += " (cut)"
		}
		id := l.Identity
		fmt.Fprintf(tw, "%d:%d\t%s\t%s\t%s\t%s\t%s/%d@%d\t%s\t%s\t%s\t%s\n", l.Partition, l.Offset, short(id.Tenant), dash(id.Kind), short(event(id)),
			stamp(l.Time), l.FromTopic, l.FromPartition, l.FromOffset, dash(l.Group), size, short(l.Error), id.ID)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	fmt.Fprintf(stdout, "%d dead letters in %s\n", len(letters), dlq)
	return nil
}

// dlqShowCommand is `worker dlq show PARTITION:OFFSET | letters`: one letter,
// its value opened, for an operator who holds the payload keys; stderr records
// that it was shown.
func dlqShowCommand(getenv func(string) string, stdout, stderr io.Writer, x Extra) cli.Command {
	sel := letterFlags{x: x}
	return cli.Command{Name: "dlq show", Args: "PARTITION:OFFSET | --id ID | --tenant T --kind K --event-id ID [--source S]",
		Summary: "print one dead letter with its value opened; needs the payload keys, and logs that it was shown (KAFKA_*, DLQ_TOPIC, PAYLOAD_KEYS)",
		Flags:   func(fs *flag.FlagSet) { sel.register(fs, "show") },
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			selectors, err := sel.selectors()
			switch {
			case err != nil:
				return err
			case len(selectors) > 1 || (len(selectors) == 1) == (fs.NArg() == 1) || fs.NArg() > 1:
				return cli.Usagef("want one PARTITION:OFFSET (as dlq list prints it), or one letter by --id or --tenant, --kind and --event-id")
			case len(selectors) == 1:
				return dlqShow(ctx, getenv, letterAt{sel: selectors[0], kinds: x.letters()}, stdout, stderr)
			}
			partition, offset, err := letterRef(fs.Arg(0))
			if err != nil {
				return err
			}
			return dlqShow(ctx, getenv, letterAt{partition: partition, offset: offset, kinds: x.letters()}, stdout, stderr)
		}}
}

// letterAt names one letter: by its place, or by a selector that must pick
// exactly one.
type letterAt struct {
	partition int
	offset    int64
	sel       consumer.Selector
	kinds     consumer.KindNames // the binary's kinds
}

// find reads the letter named.
func (at letterAt) find(ctx context.Context, cluster kafkaclient.Cluster, dlq string, keys consumer.Sealer) (kafka.Message, error) {
	if at.sel == (consumer.Selector{}) {
		return consumer.Letter(ctx, cluster, dlq, at.partition, at.offset)
	}
	var found []kafka.Message
	kinds := at.kinds
	err := consumer.Letters(ctx, cluster, dlq, func(m kafka.Message, _ int64) error {
		li, err := consumer.Identify(m, keys, kinds)
		if err == nil && at.sel.Matches(li.Identity) {
			found = append(found, m)
		}
		return err
	})
	switch {
	case err != nil:
		return kafka.Message{}, err
	case len(found) == 0:
		return kafka.Message{}, fmt.Errorf("%w in %s for %+v", consumer.ErrNoLetter, dlq, at.sel)
	case len(found) > 1:
		return kafka.Message{}, fmt.Errorf("%d letters in %s for %+v: show one by --id (dlq list prints them)", len(found), dlq, at.sel)
	}
	return found[0], nil
}

// letterRef parses PARTITION:OFFSET.
func letterRef(s string) (int, int64, error) {
	p, o, ok := strings.Cut(s, ":")
	partition, perr := strconv.Atoi(p)
	offset, oerr := strconv.ParseInt(o, 10, 64)
	if !ok || perr != nil || oerr != nil || partition < 0 || offset < 0 {
		return 0, 0, cli.Usagef("%q is not PARTITION:OFFSET", s)
	}
	return partition, offset, nil
}

func dlqShow(ctx context.Context, getenv func(string) string, at letterAt, stdout, stderr io.Writer) error {
	e := config.New(getenv)
	cluster := e.Kafka()
	_, _, dlq := settings.Topics(e)
	keys := e.String("PAYLOAD_KEYS", "")
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if keys == "" {
		return cli.Usagef("PAYLOAD_KEYS is not set: a dead letter's value is sealed, and only the payload keys open it")
	}
	ring, err := payloadcodec.ParseKeyring(keys)
	if err != nil {
		return fmt.Errorf("configuration: PAYLOAD_KEYS: %w", err)
	}
	codec := payloadcodec.New(ring)
	m, err := at.find(ctx, cluster, dlq, codec)
	if err != nil {
		return err
	}
	orig, whole, err := consumer.Open(m, codec)
	if err == nil {
		orig, err = revealLetter(ctx, e.String("DATABASE_URL", ""), m, orig, codec)
	}
	if err != nil {
		return fmt.Errorf("open dead letter %d:%d: %w", m.Partition, m.Offset, err)
	}
	info, err := consumer.Identify(m, codec, at.kinds)
	if err != nil {
		return err
	}
	// Who reads a sealed letter is on record wherever the process's stderr goes.
	slog.New(slog.NewJSONHandler(stderr, nil)).Info("dead letter shown", "topic", dlq, "partition", m.Partition, "offset", m.Offset)
	return printLetter(stdout, info, orig, whole)
}

// revealLetter opens the layer of a letter sealed under its customer's key,
// with the customer keys in the database at url; an erased customer's letter
// reads personal.Erased. Other letters need no database.
func revealLetter(ctx context.Context, url string, m, orig kafka.Message, codec *payloadcodec.Codec) (kafka.Message, error) {
	if !consumer.Describe(m).Personal {
		return orig, nil
	}
	if url == "" {
		return kafka.Message{}, cli.Usagef("this letter is sealed under its customer's data key: set DATABASE_URL to open it with the customer keys")
	}
	pool, err := database.Open(ctx, url, 2, nil)
	if err != nil {
		return kafka.Message{}, err
	}
	defer pool.Close()
	customers, err := custkeys.Open(ctx, pool, codec)
	if err != nil {
		return kafka.Message{}, err
	}
	orig, _, err = consumer.Reveal(ctx, m, orig, customers)
	return orig, err
}

// printLetter writes a letter's provenance, its original headers and key, and
// its value (indented when it is JSON).
func printLetter(w io.Writer, info consumer.LetterInfo, orig kafka.Message, whole bool) error {
	fmt.Fprintf(w, "letter:     %d:%d, dead-lettered %s, ID %s\n", info.Partition, info.Offset, stamp(info.Time), info.Identity.ID)
	fmt.Fprintf(w, "of:         %s\n", info.Identity)
	fmt.Fprintf(w, "from:       %s/%d@%d (group %s)\n", info.FromTopic, info.FromPartition, info.FromOffset, dash(info.Group))
	fmt.Fprintf(w, "error:      %s\n", info.Error)
	fmt.Fprintf(w, "key:        %s\n", dash(string(orig.Key)))
	for _, h := range orig.Headers {
		fmt.Fprintf(w, "header:     %s=%s\n", h.Key, h.Value)
	}
	if !whole {
		fmt.Fprintf(w, "value:      the first %d bytes only (the rest was too large to keep)\n", len(orig.Value))
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, orig.Value, "", "  ") == nil {
		orig.Value = pretty.Bytes()
	}
	if _, err := fmt.Fprintf(w, "%s\n", orig.Value); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// dlqPurgeCommand is `worker dlq purge (letters | --all) --by NAME [--dry-run]`:
// letters an operator discards are settled, so no redrive sends them. It prints
// each letter it discards.
func dlqPurgeCommand(getenv func(string) string, stdout io.Writer, x Extra) cli.Command {
	sel := letterFlags{x: x}
	var all, dryRun bool
	var by string
	return cli.Command{Name: "dlq purge", Args: "(--id ID... | --tenant T --kind K --event-id ID... [--source S] | --all) --by NAME [--dry-run]",
		Summary: "discard dead letters: no redrive sends them again; they stay in the topic until its retention (DATABASE_URL, KAFKA_*, DLQ_TOPIC, PAYLOAD_KEYS)",
		Flags: func(fs *flag.FlagSet) {
			sel.register(fs, "purge")
			fs.BoolVar(&all, "all", false, "purge every letter in the topic now")
			fs.StringVar(&by, "by", "", "who purges (recorded with each letter)")
			fs.BoolVar(&dryRun, "dry-run", false, "say what would be purged; record nothing")
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			selectors, err := sel.selectors()
			switch {
			case err != nil:
				return err
			case fs.NArg() > 0:
				return cli.Usagef("unexpected argument %q", fs.Arg(0))
			case all == (len(selectors) > 0):
				return cli.Usagef("want --id ID..., --tenant T --kind K --event-id ID..., or --all: one of them")
			case strings.TrimSpace(by) == "" || len(by) > 64:
				return cli.Usagef("want --by NAME (at most 64 characters)")
			}
			opts := consumer.PurgeOptions{Select: selectors, Kinds: x.letters(), By: strings.TrimSpace(by), DryRun: dryRun}
			return dlqPurge(ctx, getenv, opts, stdout)
		}}
}

func dlqPurge(ctx context.Context, getenv func(string) string, opts consumer.PurgeOptions, stdout io.Writer) error {
	e := config.New(getenv)
	url, cluster, keys := e.Required("DATABASE_URL"), e.Kafka(), e.Required("PAYLOAD_KEYS")
	_, _, opts.DLQTopic = settings.Topics(e)
	codec, pool, err := openLetters(ctx, e, url, keys)
	if err != nil {
		return err
	}
	defer pool.Close()
	verb, prefix := "purged", ""
	if opts.DryRun {
		verb, prefix = "would purge", "dry run, nothing recorded: "
	}
	opts.Discarded = func(id consumer.Identity) { fmt.Fprintf(stdout, "%s: %s\n", verb, id) }
	sum, err := consumer.Purge(ctx, cluster, opts, consumer.NewRedrives(pool), codec)
	fmt.Fprintf(stdout, "%s%s: %s\n", prefix, opts.DLQTopic, sum)
	return err
}

// dlqRedriveCommand is `worker dlq redrive [letters] [--dry-run]`.
func dlqRedriveCommand(getenv func(string) string, stdout io.Writer, x Extra) cli.Command {
	sel := letterFlags{x: x}
	var dryRun bool
	return cli.Command{Name: "dlq redrive", Args: "[--id ID... | --tenant T --kind K --event-id ID... [--source S]] [--dry-run]",
		Summary: "re-publish dead letters to the requests topic, each once (DATABASE_URL, KAFKA_*, DLQ_TOPIC, REQUESTS_TOPIC, PAYLOAD_KEYS)",
		Flags: func(fs *flag.FlagSet) {
			sel.register(fs, "redrive")
			fs.BoolVar(&dryRun, "dry-run", false, "say what would be redriven; write and record nothing")
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			selectors, err := sel.selectors()
			switch {
			case err != nil:
				return err
			case fs.NArg() > 0:
				return cli.Usagef("unexpected argument %q", fs.Arg(0))
			}
			return redrive(ctx, getenv, consumer.RedriveOptions{Select: selectors, Kinds: x.letters(), Progress: 1000, DryRun: dryRun}, stdout)
		}}
}

// redrive re-publishes the letters opts selects.
func redrive(ctx context.Context, getenv func(string) string, opts consumer.RedriveOptions, stdout io.Writer) error {
	e := config.New(getenv)
	url, cluster, keys := e.Required("DATABASE_URL"), e.Kafka(), e.Required("PAYLOAD_KEYS")
	_, opts.RequestsTopic, opts.DLQTopic = settings.Topics(e)
	logger := telemetry.NewLogger(stdout, e.Level())
	codec, pool, err := openLetters(ctx, e, url, keys)
	if err != nil {
		return err
	}
	defer pool.Close()
	if opts.Customers, err = custkeys.Open(ctx, pool, codec); err != nil {
		return err
	}
	w := kafkaclient.NewWriter(cluster, "")
	defer w.Close()
	sum, err := consumer.Redrive(ctx, cluster, opts, w, consumer.NewRedrives(pool), codec, logger)
	if opts.DryRun {
		fmt.Fprintf(stdout, "dry run, nothing written: %s -> %s: %s (redriven: would be)\n", opts.DLQTopic, opts.RequestsTopic, sum)
		return err
	}
	fmt.Fprintf(stdout, "%s -> %s: %s\n", opts.DLQTopic, opts.RequestsTopic, sum)
	return err
}

// letterFlags select dead letters: by ID, or by tenant, kind and eventIds (a
// CloudEvent's ids, with its source). An eventId alone is not enough: tenants and
// kinds reuse them.
type letterFlags struct {
	ids, events          stringList
	tenant, kind, source string
	x                    Extra // the binary's kinds
}

func (f *letterFlags) register(fs *flag.FlagSet, verb string) {
	fs.Var(&f.ids, "id", verb+" the letter of this ID, as dlq list prints it (repeatable)")
	fs.StringVar(&f.tenant, "tenant", "", "the tenant of the letters of --event-id")
	fs.StringVar(&f.kind, "kind", "", "the kind of the letters of --event-id: "+strings.Join(f.x.names(), " or "))
	fs.Var(&f.events, "event-id", verb+" the letter of this eventId, or CloudEvent id, of --tenant and --kind (repeatable)")
	fs.StringVar(&f.source, "source", "", "the source of the CloudEvents of --event-id")
}

// selectors are the letters the flags name; none when no flag was given.
func (f *letterFlags) selectors() ([]consumer.Selector, error) {
	byEvent := f.tenant != "" || f.kind != "" || f.source != "" || len(f.events) > 0
	switch {
	case len(f.ids) > 0 && byEvent:
		return nil, cli.Usagef("want --id ID..., or --tenant T --kind K --event-id ID...: not both")
	case byEvent && (f.tenant == "" || f.kind == "" || len(f.events) == 0):
		return nil, cli.Usagef("want --tenant, --kind and --event-id together: an eventId alone names no letter")
	case byEvent && !slices.Contains(f.x.names(), f.kind):
		return nil, cli.Usagef("--kind %q is not a kind: want %s", f.kind, strings.Join(f.x.names(), " or "))
	}
	var out []consumer.Selector
	for _, id := range f.ids {
		out = append(out, consumer.Selector{ID: id})
	}
	for _, e := range f.events {
		out = append(out, consumer.Selector{Tenant: f.tenant, Kind: f.kind, EventID: e, Source: f.source})
	}
	for _, s := range out {
		if err := s.Check(); err != nil {
			return nil, cli.Usagef("%v", err)
		}
	}
	return out, nil
}

// picked reports whether sel picks id; every letter when sel is empty.
func picked(sel []consumer.Selector, id consumer.Identity) bool {
	return len(sel) == 0 || slices.ContainsFunc(sel, func(s consumer.Selector) bool { return s.Matches(id) })
}

// event is a letter's eventId, and a CloudEvent's source.
func event(id consumer.Identity) string {
	if id.Source == "" {
		return "eventId " + strconv.Quote(short(id.EventID))
	}
	return "id " + strconv.Quote(short(id.EventID)) + " of source " + strconv.Quote(short(id.Source))
}

// short cuts what a letter says to 64 characters for a table: a hostile one can
// say a lot. dlq show prints it whole.
func short(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return dash(s)
}

// openLetters checks the configuration e read, then opens what settling dead
// letters needs: the codec that opens them (PAYLOAD_KEYS) and a small pool for
// the record of what was redriven or purged.
func openLetters(ctx context.Context, e *config.Env, url, keys string) (*payloadcodec.Codec, *pgxpool.Pool, error) {
	if err := e.Err(); err != nil {
		return nil, nil, fmt.Errorf("configuration: %w", err)
	}
	ring, err := payloadcodec.ParseKeyring(keys)
	if err != nil {
		return nil, nil, fmt.Errorf("configuration: PAYLOAD_KEYS: %w", err)
	}
	pool, err := database.Open(ctx, url, 2, nil)
	if err != nil {
		return nil, nil, err
	}
	return payloadcodec.New(ring), pool, nil
}
