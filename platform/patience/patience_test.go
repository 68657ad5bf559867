package patience_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/orderflow/orderflow/platform/patience"
)

var (
	errSilent  = errors.New("no answer")
	errRefused = errors.New("refused")
)

func silent(err error) bool { return errors.Is(err, errSilent) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// A server silent for its first two calls is reached on the third; a refusal
// is not asked again; silence past the time allowed is given up on.
func TestDoWaitsOnSilenceOnly(t *testing.T) {
	calls := 0
	err := patience.Do(context.Background(), 30*time.Second, quiet, "server", silent, func() error {
		if calls++; calls < 3 {
			return errSilent
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("silent twice: %v after %d calls, want nil after 3", err, calls)
	}

	calls = 0
	err = patience.Do(context.Background(), 30*time.Second, quiet, "server", silent, func() error { calls++; return errRefused })
	if !errors.Is(err, errRefused) || calls != 1 {
		t.Fatalf("refused: %v after %d calls, want the refusal after 1", err, calls)
	}

	calls = 0
	began := time.Now()
	err = patience.Do(context.Background(), 2*time.Second, quiet, "server", silent, func() error { calls++; return errSilent })
	if took := time.Since(began); !errors.Is(err, errSilent) || calls < 2 || took > 3*time.Second {
		t.Fatalf("never answering within 2 s: %v after %d calls and %s", err, calls, took)
	}
}

// A stop while waiting ends the wait at once, with both the stop and the last
// silence.
func TestDoEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	began := time.Now()
	err := patience.Do(ctx, time.Minute, quiet, "server", silent, func() error { return errSilent })
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errSilent) || time.Since(began) > 5*time.Second {
		t.Fatalf("stopped while waiting: %v after %s", err, time.Since(began))
	}
}
