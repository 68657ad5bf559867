package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/orderflow/orderflow/internal/platform/telemetry"
)

// ServeOptions are the server's address and drain timing.
type ServeOptions struct {
	Addr string
	// DrainDelay is the time for load balancers to see /readyz fail before the
	// listener closes; ShutdownTimeout bounds the whole drain.
	DrainDelay      time.Duration
	ShutdownTimeout time.Duration
}

// Serve serves handler on o.Addr until ctx ends (SIGTERM), then drains: readiness
// off, DrainDelay for load balancers, then in-flight requests finish (a POST's
// critical section runs detached and always completes or releases its key).
func Serve(ctx context.Context, handler http.Handler, ready *telemetry.Readiness, o ServeOptions, logger *slog.Logger) error {
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      45 * time.Second, // above the longest Prefer: wait (30 s)
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Addr, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("api listening", "addr", ln.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	began := time.Now()
	ready.Drain()
	time.Sleep(o.DrainDelay)
	sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout-o.DrainDelay)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped", "took", time.Since(began).String())
	return nil
}
