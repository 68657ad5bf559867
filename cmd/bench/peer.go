package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// The peer: DBOS Transact, a library that keeps workflow state in PostgreSQL,
// running workflows of the order's shape (4 no-op steps) and of one step against
// the stack's PostgreSQL, at the run's n and concurrency. bench/dbos is a module
// of its own (the service never imports DBOS); make bench builds it beside the
// service's binaries.

// peerLine is what bench/dbos prints: a mark as its measured workflows start,
// then its result.
type peerLine struct {
	Phase   string  `json:"phase"`
	Engine  string  `json:"engine"`
	N       int     `json:"n"`
	Seconds float64 `json:"seconds"`
	Rate    float64 `json:"per_second"`
	P50ms   float64 `json:"p50_ms"`
	P95ms   float64 `json:"p95_ms"`
	P99ms   float64 `json:"p99_ms"`
	CPUms   float64 `json:"cpu_ms"`
}

// 6c. DBOS, the order's shape.
func (b *bench) peerOrderShape(ctx context.Context) (Result, error) {
	return b.peer(ctx, "6c. peer: DBOS Transact, order's shape (4 no-op steps)", 4)
}

// 6d. DBOS, one step.
func (b *bench) peerOneStep(ctx context.Context) (Result, error) {
	return b.peer(ctx, "6d. peer: DBOS Transact, 1 no-op step", 1)
}

// peer runs bench/dbos and reads the machine's CPU from its mark to its result, so
// its start (schema, warm-up) is not counted; its own CPU is the one it reports.
func (b *bench) peer(ctx context.Context, name string, steps int) (Result, error) {
	res := Result{Scenario: name}
	cmd := exec.CommandContext(ctx, filepath.Join(b.bins, "dbosbench"),
		"-n", strconv.Itoa(b.n), "-c", strconv.Itoa(b.conc), "-steps", strconv.Itoa(steps))
	cmd.Env = append(os.Environ(), "DATABASE_URL="+b.env["DATABASE_URL"])
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return res, fmt.Errorf("dbosbench: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("dbosbench (make bench builds it): %w", err)
	}
	var before, after map[string]float64
	var last peerLine
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var l peerLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return res, fmt.Errorf("dbosbench printed %q: %w", sc.Text(), err)
		}
		if l.Phase == "measuring" {
			before = machineCPU()
			continue
		}
		after, last = machineCPU(), l
	}
	if err := cmd.Wait(); err != nil {
		return res, fmt.Errorf("dbosbench: %w", err)
	}
	if before == nil || after == nil || last.N == 0 {
		return res, fmt.Errorf("dbosbench printed no result")
	}
	res = Result{Scenario: name, N: last.N, Seconds: last.Seconds, Rate: last.Rate, P50ms: last.P50ms, P95ms: last.P95ms, P99ms: last.P99ms,
		Note: last.Engine + ", in the caller's process; PostgreSQL's CPU read from the machine"}
	res.CPUPerOp = cpuPerOp(before, after, last.N)
	res.CPUPerOp["dbos"] = float64(int(100*last.CPUms/float64(last.N)+0.5)) / 100
	return res, nil
}
