// Package patience retries a starting process's first contact with a server
// that does not answer yet (starting, restarting, too busy), for a bounded time,
// so the process waits for it instead of exiting into its supervisor's backoff.
package patience

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Do calls try until it succeeds, fails in a way silent does not call silence,
// ctx ends, or the next wait would pass within. Waits start at half a second and
// double up to 5 s; each is logged as a warning naming what.
func Do(ctx context.Context, within time.Duration, logger *slog.Logger, what string, silent func(error) bool, try func() error) error {
	give := time.Now().Add(within)
	wait := 500 * time.Millisecond
	for {
		err := try()
		if err == nil || !silent(err) || ctx.Err() != nil || time.Now().Add(wait).After(give) {
			return err
		}
		logger.Warn(what+" not answering; trying again", "in", wait, "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (after: %w)", what, ctx.Err(), err)
		}
		wait = min(2*wait, 5*time.Second)
	}
}
