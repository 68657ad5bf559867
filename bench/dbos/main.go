// Command dbosbench measures DBOS Transact Go running durable workflows against
// PostgreSQL, so that the benchmark report can put it beside Temporal. It lives in
// a module of its own because the service's module must never import DBOS.
//
// Each workflow runs -steps no-op steps through dbos.RunAsStep (each checkpointed
// as DBOS does for real steps); -c callers each start one workflow directly, wait
// for its result, then start the next. It prints two JSON lines on stdout: a mark
// as the measured workflows start, and the result.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// engine names what is measured; go.mod pins this exact version.
const engine = "DBOS Transact Go v1.9.0"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	var usage usageError
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "dbosbench:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "dbosbench:", err)
		os.Exit(1)
	}
}

// Result is the last JSON line, the one the benchmark report reads.
type Result struct {
	Engine      string  `json:"engine"`
	Steps       int     `json:"steps"`
	N           int     `json:"n"`
	Concurrency int     `json:"concurrency"`
	Seconds     float64 `json:"seconds"`
	Rate        float64 `json:"per_second"`
	P50ms       float64 `json:"p50_ms"`
	P95ms       float64 `json:"p95_ms"`
	P99ms       float64 `json:"p99_ms"`
	// CPUms is this process's CPU time (user and system) over the measured
	// workflows; the report adds PostgreSQL's, which it reads itself.
	CPUms float64 `json:"cpu_ms"`
}

// measuring is the line printed just before the measured workflows start, so the
// report reads the machine's CPU from there.
const measuring = `{"phase":"measuring"}`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	sysURL, err := benchDatabaseURL(cfg.databaseURL)
	if err != nil {
		return usageError{err}
	}
	runID, err := newRunID()
	if err != nil {
		return err
	}

	b, err := launch(ctx, sysURL, stderr)
	if err != nil {
		return err
	}
	// Shut down on every path, so no workflow is left running when we return.
	defer func() {
		if err := b.shutdown(); err != nil {
			fmt.Fprintln(stderr, "dbosbench: shutdown:", err)
		}
	}()

	fmt.Fprintf(stderr, "dbosbench: run %s: %d warmup workflows, then %d measured (%d steps, %d callers)\n",
		runID, cfg.warmup, cfg.n, cfg.steps, cfg.concurrency)
	if cfg.warmup > 0 {
		if _, _, err := b.measure(ctx, runID+"-warmup", cfg.warmup, cfg.concurrency, cfg.steps); err != nil {
			return fmt.Errorf("warmup: %w", err)
		}
	}
	if _, err := fmt.Fprintln(stdout, measuring); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	cpu := processCPU()
	lat, total, err := b.measure(ctx, runID, cfg.n, cfg.concurrency, cfg.steps)
	if err != nil {
		return fmt.Errorf("measure: %w", err)
	}

	res := summarize(cfg, total, lat)
	res.CPUms = float64((processCPU() - cpu).Microseconds()) / 1000
	line, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", line); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

// processCPU is the CPU time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// summarize turns the latencies into the reported figures.
func summarize(cfg config, total time.Duration, lat []time.Duration) Result {
	return Result{
		Engine:      engine,
		Steps:       cfg.steps,
		N:           cfg.n,
		Concurrency: cfg.concurrency,
		Seconds:     total.Seconds(),
		Rate:        float64(len(lat)) / total.Seconds(),
		P50ms:       percentileMs(lat, 0.50),
		P95ms:       percentileMs(lat, 0.95),
		P99ms:       percentileMs(lat, 0.99),
	}
}
