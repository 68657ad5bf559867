package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/cmd/internal/settings"
	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/internal/platform/cli"
	"github.com/orderflow/orderflow/internal/platform/config"
	"github.com/orderflow/orderflow/internal/platform/database"
	"github.com/orderflow/orderflow/internal/platform/payloadcodec"
)

// dlqListCommand is `worker dlq list [-o json]`: each dead letter's provenance
// and failure, never its value, which may hold a card token.
func dlqListCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var out cli.Format
	return cli.Command{Name: "dlq list", Args: "[-o json]",
		Summary: "list the dead letters: where each came from and why it failed, not what it holds (KAFKA_*, DLQ_TOPIC)",
		Flags:   func(fs *flag.FlagSet) { cli.OutputFlag(fs, &out) },
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() > 0 {
				return cli.Usagef("unexpected argument %q", fs.Arg(0))
			}
			return dlqList(ctx, getenv, out, stdout)
		}}
}

func dlqList(ctx context.Context, getenv func(string) string, out cli.Format, stdout io.Writer) error {
	e := config.New(getenv)
	cluster := e.Kafka()
	_, _, dlq := settings.Topics(e)
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	var letters []consumer.LetterInfo
	err := consumer.Letters(ctx, cluster, dlq, func(m kafka.Message, _ int64) error {
		letters = append(letters, consumer.Describe(m))
		return nil
	})
	if err != nil {
		return err
	}
	if out == cli.JSON {
		return cli.WriteJSON(stdout, letters)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LETTER\tDEAD-LETTERED\tFROM\tGROUP\tBYTES\tERROR")
	for _, l := range letters {
		size := strconv.Itoa(l.Bytes)
		if !l.Whole {
			size += " (cut)"
		}
		fmt.Fprintf(tw, "%d:%d\t%s\t%s/%d@%d\t%s\t%s\t%s\n", l.Partition, l.Offset, stamp(l.Time), l.FromTopic, l.FromPartition, l.FromOffset,
			dash(l.Group), size, l.Error)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	fmt.Fprintf(stdout, "%d dead letters in %s\n", len(letters), dlq)
	return nil
}

// dlqShowCommand is `worker dlq show PARTITION:OFFSET`: one letter, its value
// opened, for an operator who holds the payload keys; stderr records that it was
// shown.
func dlqShowCommand(getenv func(string) string, stdout, stderr io.Writer) cli.Command {
	return cli.Command{Name: "dlq show", Args: "PARTITION:OFFSET",
		Summary: "print one dead letter with its value opened; needs the payload keys, and logs that it was shown (KAFKA_*, DLQ_TOPIC, PAYLOAD_KEYS)",
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() != 1 {
				return cli.Usagef("want one PARTITION:OFFSET (as dlq list prints it)")
			}
			partition, offset, err := letterRef(fs.Arg(0))
			if err != nil {
				return err
			}
			return dlqShow(ctx, getenv, partition, offset, stdout, stderr)
		}}
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

func dlqShow(ctx context.Context, getenv func(string) string, partition int, offset int64, stdout, stderr io.Writer) error {
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
	m, err := consumer.Letter(ctx, cluster, dlq, partition, offset)
	if err != nil {
		return err
	}
	orig, whole, err := consumer.Open(m, payloadcodec.New(ring))
	if err != nil {
		return fmt.Errorf("open dead letter %d:%d: %w", partition, offset, err)
	}
	// Who reads a sealed letter is on record wherever the process's stderr goes.
	slog.New(slog.NewJSONHandler(stderr, nil)).Info("dead letter shown", "topic", dlq, "partition", partition, "offset", offset)
	return printLetter(stdout, consumer.Describe(m), orig, whole)
}

// printLetter writes a letter's provenance, its original headers and key, and
// its value (indented when it is JSON).
func printLetter(w io.Writer, info consumer.LetterInfo, orig kafka.Message, whole bool) error {
	fmt.Fprintf(w, "letter:     %d:%d, dead-lettered %s\n", info.Partition, info.Offset, stamp(info.Time))
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

// dlqPurgeCommand is `worker dlq purge (--event-id ID... | --all) --by NAME
// [--dry-run]`: letters an operator discards are settled, so no redrive sends
// them.
func dlqPurgeCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var ids stringList
	var all, dryRun bool
	var by string
	return cli.Command{Name: "dlq purge", Args: "(--event-id ID... | --all) --by NAME [--dry-run]",
		Summary: "discard dead letters: no redrive sends them again; they stay in the topic until its retention (DATABASE_URL, KAFKA_*, DLQ_TOPIC, PAYLOAD_KEYS)",
		Flags: func(fs *flag.FlagSet) {
			fs.Var(&ids, "event-id", "purge the letter of this eventId (repeatable)")
			fs.BoolVar(&all, "all", false, "purge every letter in the topic now")
			fs.StringVar(&by, "by", "", "who purges (recorded with each letter)")
			fs.BoolVar(&dryRun, "dry-run", false, "say what would be purged; record nothing")
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			switch {
			case fs.NArg() > 0:
				return cli.Usagef("unexpected argument %q", fs.Arg(0))
			case all == (len(ids) > 0):
				return cli.Usagef("want --event-id ID... or --all, not both")
			case strings.TrimSpace(by) == "" || len(by) > 64:
				return cli.Usagef("want --by NAME (at most 64 characters)")
			}
			opts := consumer.PurgeOptions{EventIDs: ids, By: strings.TrimSpace(by), DryRun: dryRun}
			return dlqPurge(ctx, getenv, opts, stdout)
		}}
}

func dlqPurge(ctx context.Context, getenv func(string) string, opts consumer.PurgeOptions, stdout io.Writer) error {
	e := config.New(getenv)
	url, cluster, keys := e.Required("DATABASE_URL"), e.Kafka(), e.Required("PAYLOAD_KEYS")
	_, _, opts.DLQTopic = settings.Topics(e)
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	ring, err := payloadcodec.ParseKeyring(keys)
	if err != nil {
		return fmt.Errorf("configuration: PAYLOAD_KEYS: %w", err)
	}
	pool, err := database.Open(ctx, url, 2, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	sum, err := consumer.Purge(ctx, cluster, opts, consumer.NewRedrives(pool), payloadcodec.New(ring))
	prefix := ""
	if opts.DryRun {
		prefix = "dry run, nothing recorded: "
	}
	fmt.Fprintf(stdout, "%s%s: %s\n", prefix, opts.DLQTopic, sum)
	return err
}
