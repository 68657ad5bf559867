// Command paysim runs the payment provider SANDBOX (see internal/sandbox): a
// Stripe-like API for development and tests, never a real provider.
//
// Faults can be set at start (PAYSIM_LATENCY_MS, PAYSIM_FAIL_AFTER, ...) or at run
// time with PUT /sandbox/faults; webhooks (PAYSIM_WEBHOOK_URL, _SECRETS,
// _DUPLICATES, _DELAY_MS) or with PUT /sandbox/webhooks.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/orderflow/orderflow/internal/platform/cli"
	"github.com/orderflow/orderflow/internal/platform/config"
	"github.com/orderflow/orderflow/internal/platform/telemetry"
	"github.com/orderflow/orderflow/internal/sandbox"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "probe" { // the container's healthcheck
		os.Exit(cli.Probe(context.Background(), os.Args[2:], os.Stderr))
	}
	if err := run(context.Background(), os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "paysim:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := config.New(getenv)
	addr := e.String("PAYSIM_ADDR", ":8099")
	logger := telemetry.NewLogger(stdout, e.String("LOG_LEVEL", "info"))
	opts := sandbox.Options{
		Faults: sandbox.Faults{
			LatencyMS:  e.Int("PAYSIM_LATENCY_MS", 0),
			FailBefore: e.Int("PAYSIM_FAIL_BEFORE", 0),
			FailAfter:  e.Int("PAYSIM_FAIL_AFTER", 0),
			DropAfter:  e.Int("PAYSIM_DROP_AFTER", 0),
		},
		KeyTTL:      e.Duration("PAYSIM_KEY_TTL", 24*time.Hour),
		SearchDelay: e.Duration("PAYSIM_SEARCH_DELAY", time.Second),
	}
	hooks := sandbox.Webhooks{URL: e.String("PAYSIM_WEBHOOK_URL", ""), Secrets: e.List("PAYSIM_WEBHOOK_SECRETS", ""),
		Duplicates: e.Int("PAYSIM_WEBHOOK_DUPLICATES", 1) - 1, DelayMS: e.Int("PAYSIM_WEBHOOK_DELAY_MS", 1)}
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if hooks.URL != "" && len(hooks.Secrets) == 0 {
		return errors.New("configuration: PAYSIM_WEBHOOK_URL needs PAYSIM_WEBHOOK_SECRETS to sign with")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	sim := sandbox.New(logger, opts)
	defer sim.Close()
	sim.SetWebhooks(hooks)
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("payment sandbox listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
