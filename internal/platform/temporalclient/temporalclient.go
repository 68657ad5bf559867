// Package temporalclient dials the Temporal frontend with the process's logger and
// the payload encryption.
package temporalclient

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"

	"github.com/orderflow/orderflow/internal/platform/payloadcodec"
)

// Dial connects to Temporal and checks that the frontend answers.
// Every payload it writes is encrypted through codec.
func Dial(ctx context.Context, address, namespace string, codec converter.PayloadCodec, logger *slog.Logger) (client.Client, error) {
	c, err := client.DialContext(ctx, Options(address, namespace, codec, logger))
	if err != nil {
		return nil, fmt.Errorf("dial temporal at %s: %w", address, err)
	}
	return c, nil
}

// Options are the client options of Dial.
func Options(address, namespace string, codec converter.PayloadCodec, logger *slog.Logger) client.Options {
	dc, fc := payloadcodec.Converters(codec)
	return client.Options{
		HostPort:         address,
		Namespace:        namespace,
		Logger:           tlog.NewStructuredLogger(logger.With("component", "temporal")),
		DataConverter:    dc,
		FailureConverter: fc,
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
