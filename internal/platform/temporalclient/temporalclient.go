// Package temporalclient dials the Temporal frontend with the process's logger and
// the payload encryption.
package temporalclient

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"

	"github.com/orderflow/orderflow/internal/platform/payloadcodec"
)

// Settings are what a client is dialed with.
type Settings struct {
	Address, Namespace string
	// Codec encrypts every payload the client and its workers write.
	Codec converter.PayloadCodec
	// Metrics receives the SDK's own metrics; nil for none.
	Metrics client.MetricsHandler
	// Interceptors of the client and of every worker made from it (tracing).
	Interceptors []interceptor.ClientInterceptor
	Logger       *slog.Logger
}

// Dial connects to Temporal and checks that the frontend answers.
func Dial(ctx context.Context, s Settings) (client.Client, error) {
	c, err := client.DialContext(ctx, s.Options())
	if err != nil {
		return nil, fmt.Errorf("dial temporal at %s: %w", s.Address, err)
	}
	return c, nil
}

// Options are the client options of Dial.
func (s Settings) Options() client.Options {
	dc, fc := payloadcodec.Converters(s.Codec)
	return client.Options{
		HostPort:         s.Address,
		Namespace:        s.Namespace,
		Logger:           tlog.NewStructuredLogger(s.Logger.With("component", "temporal")),
		DataConverter:    dc,
		FailureConverter: fc,
		MetricsHandler:   s.Metrics,
		Interceptors:     s.Interceptors,
	}
}

// Check is a readiness check of the Temporal frontend.
func Check(c client.Client) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return fmt.Errorf("temporal: %w", err)
		}
		return nil
	}
}
