// Command carrier serves the fake carrier's booking API on CARRIER_ADDR
// (127.0.0.1:8097), taking CARRIER_DELAY to book a parcel.
package main

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"example.com/shipments/carrier"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	delay, _ := time.ParseDuration(os.Getenv("CARRIER_DELAY"))
	srv := &http.Server{Addr: cmp.Or(os.Getenv("CARRIER_ADDR"), "127.0.0.1:8097"), Handler: carrier.New(delay).Handler(),
		ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		os.Exit(1)
	}
}
