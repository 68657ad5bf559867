package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/platform/telemetry"
)

// ServeOptions are the server's addresses and drain timing.
type ServeOptions struct {
	Addr string
	// OpsAddr serves /healthz, /readyz and /metrics, off the public port.
	OpsAddr string
	// DrainDelay is the time for load balancers to see /readyz fail before the
	// listener closes; ShutdownTimeout bounds the whole drain.
	DrainDelay      time.Duration
	ShutdownTimeout time.Duration
}

// Serve serves handler on o.Addr and the ops endpoints (reg, ready) on o.OpsAddr
// until ctx ends (SIGTERM), then drains: readiness off and every Prefer: wait
// cut short (it answers 202 with the order as it stands, and its key is
// completed), DrainDelay for load balancers, then in-flight requests finish (a
// POST's critical section runs detached and always completes or releases its
// key); the ops listener closes last.
func Serve(ctx context.Context, handler http.Handler, reg *prometheus.Registry, ready *telemetry.Readiness, o ServeOptions, logger *slog.Logger) error {
	draining := make(chan struct{})
	srv := &http.Server{
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.Background(), drainKey{}, draining)
		},
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      45 * time.Second, // above the longest Prefer: wait (30 s) and a start
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Addr, err)
	}
	opsLn, err := net.Listen("tcp", o.OpsAddr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("listen on %s: %w", o.OpsAddr, err)
	}
	mux := http.NewServeMux()
	telemetry.Mount(mux, reg, ready)
	ops := telemetry.OpsServer(mux)
	defer ops.Close()
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	go func() { errc <- ops.Serve(opsLn) }()
	logger.Info("api listening", "addr", ln.Addr().String(), "ops", opsLn.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	began := time.Now()
	ready.Drain()
	close(draining)
	time.Sleep(o.DrainDelay)
	sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout-o.DrainDelay)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped", "took", time.Since(began).String())
	return nil
}

type drainKey struct{}

// untilDrain is ctx, ended too when the server starts draining: a request waiting
// for its order (Prefer: wait) stops waiting then, so no stop outlasts it.
func untilDrain(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	draining, _ := ctx.Value(drainKey{}).(chan struct{})
	if draining != nil {
		go func() {
			select {
			case <-draining:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}
