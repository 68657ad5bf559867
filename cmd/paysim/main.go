// Command paysim runs the payment provider SANDBOX (see payments/sandbox): a
// Stripe-like API for development and tests, never a real provider.
//
// Faults can be set at start (PAYSIM_LATENCY_MS, PAYSIM_FAIL_AFTER, ...) or at run
// time with PUT /sandbox/faults; webhooks (PAYSIM_WEBHOOK_URL, _SECRETS,
// _DUPLICATES, _DELAY_MS) or with PUT /sandbox/webhooks. PAYSIM_STATE names the
// file that keeps the sandbox's state across restarts (none: memory only), and
// PAYSIM_REFUND_FAIL_AFTER how long a refund of the refund failure test cards
// lasts before it fails (30s).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/telemetry"
	"github.com/orderflow/orderflow/settings"
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
	c, err := settings.LoadPaysim(e)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	addr, logger := c.Addr, telemetry.NewLogger(stdout, c.LogLevel)
	sim, err := open(logger, c.Options, c.State)
	if err != nil {
		return err
	}
	defer sim.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	sim.SetWebhooks(c.Webhooks)
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

// open starts the sandbox on its state file, or in memory without one.
func open(logger *slog.Logger, o sandbox.Options, path string) (*sandbox.Server, error) {
	if path == "" {
		return sandbox.New(logger, o), nil
	}
	sim, err := sandbox.Open(logger, o, path)
	if err != nil {
		return nil, fmt.Errorf("open the state: %w", err)
	}
	logger.Info("payment sandbox state", "file", path)
	return sim, nil
}
