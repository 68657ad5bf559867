package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
)

// shutdownTimeout bounds each stage of DBOS's ordered shutdown.
const shutdownTimeout = 30 * time.Second

type bench struct {
	dbos dbos.Context
}

// launch opens DBOS on its system database and registers the workflow, which
// DBOS allows only before Launch.
func launch(ctx context.Context, databaseURL string, stderr io.Writer) (*bench, error) {
	dctx, err := dbos.NewContext(ctx, dbos.Config{
		AppName:     "orderflow_dbos_bench",
		DatabaseURL: databaseURL, // DBOS creates this database when it is missing.
		// DBOS logs at info on stdout by default; stdout carries only the report's lines.
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		// A fixed version spares hashing the binary at start and keeps every run
		// on one version, so none is flagged as not the latest.
		ApplicationVersion: "dbosbench",
	})
	if err != nil {
		return nil, fmt.Errorf("dbos.NewContext: %w", err)
	}
	dbos.RegisterWorkflow(dctx, benchWorkflow)
	if err := dbos.Launch(dctx); err != nil {
		// A failed Launch has already torn the context down.
		return nil, fmt.Errorf("dbos.Launch: %w", err)
	}
	return &bench{dbos: dctx}, nil
}

func (b *bench) shutdown() error {
	if err := dbos.Shutdown(b.dbos, shutdownTimeout); err != nil {
		return fmt.Errorf("dbos.Shutdown: %w", err)
	}
	return nil
}

// benchWorkflow runs steps no-op steps. It is a top-level function because DBOS
// names a workflow after its function, and recovery finds it by that name.
func benchWorkflow(ctx dbos.Context, steps int) (int, error) {
	for i := range steps {
		if _, err := dbos.RunAsStep(ctx, noopStep); err != nil {
			return i, fmt.Errorf("step %d: %w", i, err)
		}
	}
	return steps, nil
}

// noopStep does nothing, so what is measured is DBOS's own checkpointing.
func noopStep(context.Context) (int, error) { return 0, nil }

// runOne starts one workflow directly (no queue) and waits for its result.
func (b *bench) runOne(id string, steps int) error {
	h, err := dbos.RunWorkflow(b.dbos, benchWorkflow, steps, dbos.WithWorkflowID(id))
	if err != nil {
		return fmt.Errorf("start workflow %s: %w", id, err)
	}
	done, err := h.GetResult()
	if err != nil {
		return fmt.Errorf("workflow %s: %w", id, err)
	}
	if done != steps {
		return fmt.Errorf("workflow %s ran %d of %d steps", id, done, steps)
	}
	return nil
}

// measure runs n workflows on conc callers, each starting one and waiting for it
// before the next, and reports each one's latency and the wall time of all.
func (b *bench) measure(ctx context.Context, prefix string, n, conc, steps int) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	fail := func(err error) { once.Do(func() { firstErr = err }) }
	var wg sync.WaitGroup
	began := time.Now()
	for range min(conc, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				// A signal stops the run between workflows; DBOS's context, derived
				// from ctx, also cancels those in flight.
				if err := ctx.Err(); err != nil {
					fail(fmt.Errorf("stopped: %w", context.Cause(ctx)))
					next.Store(int64(n))
					return
				}
				t := time.Now()
				if err := b.runOne(fmt.Sprintf("%s-%d", prefix, i), steps); err != nil {
					fail(err)
					next.Store(int64(n)) // the others stop too
					return
				}
				lat[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	return lat, time.Since(began), firstErr
}

// newRunID prefixes this run's workflow IDs, so that repeated runs on the same
// system database never reuse one (DBOS would return the recorded result).
func newRunID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return "dbosbench-" + hex.EncodeToString(b[:]), nil
}
