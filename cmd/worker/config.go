package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/orderflow/orderflow/cmd/internal/settings"
	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/internal/platform/config"
	"github.com/orderflow/orderflow/internal/platform/database"
	"github.com/orderflow/orderflow/internal/platform/kafkaclient"
	"github.com/orderflow/orderflow/internal/platform/payloadcodec"
	"github.com/orderflow/orderflow/internal/platform/telemetry"
)

// command runs a subcommand: migrate, or dlq redrive.
// redrive is `worker dlq redrive [--event-id ID]...`.
func redrive(ctx context.Context, getenv func(string) string, ids []string, dryRun bool, stdout io.Writer) error {
	e := config.New(getenv)
	url, kafka, keys := e.Required("DATABASE_URL"), e.Kafka(), e.Required("PAYLOAD_KEYS")
	_, requests, dlq := settings.Topics(e)
	logger := telemetry.NewLogger(stdout, e.Level())
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
	w := kafkaclient.NewWriter(kafka, "")
	defer w.Close()
	sum, err := consumer.Redrive(ctx, kafka, consumer.RedriveOptions{
		DLQTopic: dlq, RequestsTopic: requests, EventIDs: ids, Progress: 1000, DryRun: dryRun,
	}, w, consumer.NewRedrives(pool), payloadcodec.New(ring), logger)
	if dryRun {
		fmt.Fprintf(stdout, "dry run, nothing written: %s -> %s: %s (redriven: would be)\n", dlq, requests, sum)
		return err
	}
	fmt.Fprintf(stdout, "%s -> %s: %s\n", dlq, requests, sum)
	return err
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
