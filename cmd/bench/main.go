// Command bench measures orderflow against the raw baseline on the local stack, in
// one run: workflow starts through the HTTP API and through the Kafka ingress
// against client.ExecuteWorkflow, replays, a plain kafka-go consumer with and
// without per-message commits, and orders end to end. It prints a table and writes
// bench/results/<timestamp>.json. Run it with `make bench`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/orderflow/orderflow/testkit"
)

func main() {
	if err := run(context.Background(), os.Args, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// Result is one scenario's outcome.
type Result struct {
	Scenario string  `json:"scenario"`
	N        int     `json:"n"`
	Seconds  float64 `json:"seconds"`
	Rate     float64 `json:"per_second"`
	P50ms    float64 `json:"p50_ms,omitempty"`
	P95ms    float64 `json:"p95_ms,omitempty"`
	P99ms    float64 `json:"p99_ms,omitempty"`
	Ratio    float64 `json:"ratio_to_baseline,omitempty"`
	Baseline string  `json:"baseline,omitempty"`
	Note     string  `json:"note,omitempty"`
	// CPUPerOp is the CPU milliseconds per operation of each process group on the
	// machine during the scenario (machineCPU).
	CPUPerOp map[string]float64 `json:"cpu_ms_per_op,omitempty"`
	// Engine is Temporal's work per operation, read from its histories.
	Engine *EngineWork `json:"engine_per_op,omitempty"`
}

// Report is the JSON file.
type Report struct {
	Time        time.Time         `json:"time"`
	Profile     string            `json:"profile"` // the stack's: dev or cluster
	Machine     map[string]string `json:"machine"`
	N           int               `json:"n"`
	Concurrency int               `json:"concurrency"`
	Results     []Result          `json:"results"`
	// Figures are the ratios the README's targets are stated in, from Results.
	Figures   []Figure    `json:"figures,omitempty"`
	Resources []Resources `json:"resources"`
}

// Figure is one of orderflow's figures beside the raw baseline it is judged by.
type Figure struct {
	Name     string  `json:"name"`
	Value    float64 `json:"value"`
	Baseline float64 `json:"baseline,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"`
	Target   string  `json:"target"`
	Met      bool    `json:"met"`
}

func run(ctx context.Context, args []string, stdout io.Writer) (err error) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	env, err := stackEnv()
	if err != nil {
		return err
	}
	b, err := setup(ctx, env, o.bins, o.n, o.conc, stdout)
	if err != nil {
		return err
	}
	b.stack, b.rows, b.base = o.stack, o.rows, o.base
	defer b.close()
	// Whatever happened, the run leaves nothing in the stack make run shares.
	defer func() {
		if cerr := b.leaveNothing(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if o.plan.For > 0 {
		return b.soak(ctx, o.plan, o.soakRate, o.rampStep)
	}
	rep := Report{Time: time.Now().UTC(), Profile: env["ORDERFLOW_STACK_PROFILE"], Machine: machine(ctx, env["ORDERFLOW_STACK_PROFILE"]), N: o.n, Concurrency: o.conc}
	for _, step := range b.steps(o) {
		if o.only != "" && !slices.Contains(strings.Split(o.only, ","), step.id) {
			continue
		}
		rs, err := b.runStep(ctx, step)
		if err != nil {
			return err
		}
		for _, r := range rs {
			rep.Results = append(rep.Results, r)
			fmt.Fprintf(stdout, "  done: %-34s %8.1f/s\n", r.Scenario, r.Rate)
		}
		if step.starts {
			b.started += o.n
		}
	}
	rep.Resources = b.resources()
	return finish(stdout, rep, o.out, o.only)
}

// options are the bench's flags.
type options struct {
	n, conc, rows                int
	bins, base, out, only, stack string
	level, rampStep              time.Duration
	plan                         soakPlan
	soakRate                     float64
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&o.n, "n", 500, "operations per scenario")
	fs.IntVar(&o.conc, "c", 16, "concurrent clients (and in-flight messages per partition)")
	fs.StringVar(&o.bins, "bin", ".stack/bin", "folder with the api, worker and paysim binaries")
	fs.StringVar(&o.base, "base", "", "folder with the api and worker binaries of the build before per-customer keys (scenario 14; skipped when empty or missing)")
	fs.StringVar(&o.out, "out", "bench/results", "folder of the JSON reports")
	fs.StringVar(&o.only, "only", "", "comma-separated scenario numbers to run (e.g. 1,5); all when empty")
	fs.IntVar(&o.rows, "rows", 10_000_000, "rows scenario 10 adds to each of idempotency_keys, processed_events and orders")
	fs.StringVar(&o.stack, "stack", "scripts/stack", "the stack's script, which turns Temporal's fairness off and on (scenario 9)")
	fs.DurationVar(&o.level, "overload", 5*time.Minute, "how long scenario 13 offers each of 1x, 2x and 5x the capacity")
	fs.DurationVar(&o.rampStep, "ramp-step", 20*time.Second, "each step of the ramp that finds the capacity (scenario 13, soak)")
	o.plan = soakPlan{Fail: 0.05, Slow: 0.02}
	fs.DurationVar(&o.plan.For, "soak", 0, "instead of the scenarios, the soak: load at 0.8x the capacity for this long under faults (make soak)")
	fs.DurationVar(&o.plan.KillWorker, "soak-kill-worker", 5*time.Minute, "the soak kills the worker (SIGKILL) this often")
	fs.DurationVar(&o.plan.RestartAPI, "soak-restart-api", 7*time.Minute, "the soak restarts the API this often")
	fs.DurationVar(&o.plan.StopBroker, "soak-stop-broker", 15*time.Minute, "the soak stops Kafka this often")
	fs.DurationVar(&o.plan.BrokerDown, "soak-broker-down", 30*time.Second, "for this long")
	fs.Float64Var(&o.soakRate, "soak-rate", 0, "the soak's orders a second (0: 0.8x the capacity the ramp finds)")
	return o, fs.Parse(args[1:])
}

// step is one scenario of the run.
type step struct {
	id     string
	run    func(context.Context) ([]Result, error)
	starts bool // starts n orders that the worker then runs
	// quiet: measured with no order worker running, so a start's CPU is the
	// start's alone, not also that of running the orders started before it;
	// they wait in the task queue until the next step starts the worker.
	quiet bool
}

// steps are the scenarios, in the order they run.
func (b *bench) steps(o options) []step {
	return []step{
		{"1", one(b.baselineStart), true, true}, {"2", one(b.httpStart), true, true}, {"3", one(b.httpReplay), false, true},
		{"4", one(b.consumeCommitEach), false, false}, {"4", one(b.consumeCommitBatched), false, false},
		{"5", one(b.kafkaIngress), true, false}, {"6", one(b.endToEnd), true, false},
		{"6", one(b.baselineOneActivity), false, false}, {"6", one(b.baselineOrderShape), false, false},
		{"6", one(b.peerOrderShape), false, false}, {"6", one(b.peerOneStep), false, false},
		{"6", one(b.endToEndEager), true, false},
		{"7", one(func(ctx context.Context) (Result, error) { return b.threeDSecure(ctx, true) }), false, false},
		{"7", one(func(ctx context.Context) (Result, error) { return b.threeDSecure(ctx, false) }), false, false},
		{"8", one(b.restPost), false, false}, {"8", one(b.restWait), false, false}, {"8", one(b.restReplay), false, false},
		{"8", one(b.restEvent), false, false}, {"8", one(b.restRawUpdateWithStart), false, false},
		{"8", one(b.restWaitEager), false, false}, {"8", one(b.restEventEager), false, false},
		{"9", func(ctx context.Context) ([]Result, error) { return b.fairness(ctx, true) }, false, false},
		{"9", func(ctx context.Context) ([]Result, error) { return b.fairness(ctx, false) }, false, false},
		{"10", b.growth, false, false},
		{"11", b.refunds, false, false},
		{"12", one(b.fleetBudget), false, false},
		{"13", func(ctx context.Context) ([]Result, error) { return b.overloaded(ctx, o.level, o.rampStep) }, false, false},
		{"14", b.personal, false, false},
	}
}

// runStep runs one scenario, with its CPU per operation and the engine's work.
func (b *bench) runStep(ctx context.Context, s step) ([]Result, error) {
	if err := b.prepare(ctx, s.quiet); err != nil {
		return nil, err
	}
	before := machineCPU()
	rs, err := s.run(ctx)
	if err != nil {
		return nil, err
	}
	if len(rs) == 1 && rs[0].N > 0 && rs[0].CPUPerOp == nil {
		rs[0].CPUPerOp = cpuPerOp(before, machineCPU(), rs[0].N)
	}
	for i, r := range rs {
		if ids := b.histories[r.Scenario]; ids != nil {
			if rs[i].Engine, err = b.engineWork(ctx, ids); err != nil {
				return nil, fmt.Errorf("%s: %w", r.Scenario, err)
			}
		}
	}
	return rs, nil
}

// one adapts a scenario of one result to the steps' shape, naming it in its error.
func one(f func(context.Context) (Result, error)) func(context.Context) ([]Result, error) {
	return func(ctx context.Context) ([]Result, error) {
		r, err := f(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Scenario, err)
		}
		return []Result{r}, nil
	}
}

// stackEnv is the stack's env file, read as the tests read it: its values are not
// shell words (a DSN's query has '&').
func stackEnv() (map[string]string, error) {
	env, err := testkit.Env()
	if err != nil {
		return nil, fmt.Errorf("%w (make bench starts it)", err)
	}
	for _, k := range []string{"DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "KAFKA_BROKERS", "PAYLOAD_KEYS", "ORDERFLOW_STACK_PROFILE"} {
		if env[k] == "" {
			return nil, fmt.Errorf("%s is not in the stack's env file", k)
		}
	}
	return env, nil
}

// finish adds the ratios and figures to the report, prints it and writes it to
// the folder out, under its time and as the profile's latest (of those
// scenarios, when only some ran).
func finish(stdout io.Writer, rep Report, out, only string) error {
	ratio(rep.Results, "2. HTTP start", "1. baseline start")
	ratio(rep.Results, "3. HTTP replay", "1. baseline start")
	ratio(rep.Results, "11a. HTTP refund start", "2. HTTP start")
	ratio(rep.Results, "11b. HTTP refund replay", "3. HTTP replay")
	ratio(rep.Results, "4b. consume, batched in-order commits", "4a. consume, commit each message")
	ratio(rep.Results, "5. Kafka ingress", "1. baseline start")
	ratio(rep.Results, "6. end to end (HTTP until PAID)", "6a. baseline: raw workflow, 1 no-op activity")
	alsoRatio(rep.Results, "6. end to end (HTTP until PAID)", "6b. baseline: raw workflow, order's shape (4 no-op activities)")
	ratio(rep.Results, "6e. end to end, eager dispatch (EAGER_DISPATCH=true)", "6. end to end (HTTP until PAID)")
	ratio(rep.Results, newThis, newBefore)
	ratio(rep.Results, returningThis, returningBefore)
	latencyRatio(rep.Results, "8b. at rest: POST, Prefer: wait → 201 PAID", "8e. baseline: raw Update-with-Start, order's shape, answered after the charge")
	rep.Figures = append(figures(rep.Results), growthFigures(rep.Results)...)

	printTable(stdout, rep)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("results folder: %w", err)
	}
	path := filepath.Join(out, rep.Time.Format("20060102T150405Z")+"-"+rep.Profile+".json")
	name := "latest-" + rep.Profile
	if only != "" {
		name += "-only-" + strings.ReplaceAll(only, ",", "-")
	}
	latest := filepath.Join(out, name+".json")
	data, _ := json.MarshalIndent(rep, "", "  ")
	for _, p := range []string{path, latest} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	fmt.Fprintf(stdout, "report: %s (and %s, which the README quotes)\n", path, latest)
	return nil
}

// prepare readies the machine for a step: for a quiet one, the orders started so
// far finished and no order worker running; otherwise a worker, with nothing of
// the previous steps left to run.
func (b *bench) prepare(ctx context.Context, quiet bool) error {
	switch {
	case quiet && !b.workerRuns():
		return nil
	case quiet:
		if err := b.settle(ctx); err != nil {
			return err
		}
		b.stopWorker()
		return nil
	case !b.workerRuns():
		if err := b.startWorker(b.consuming); err != nil {
			return err
		}
	}
	return b.settle(ctx)
}

// find is the result of the scenario whose name begins with prefix.
func find(rs []Result, prefix string) (Result, bool) {
	for _, r := range rs {
		if strings.HasPrefix(r.Scenario, prefix) {
			return r, true
		}
	}
	return Result{}, false
}

func rateOf(rs []Result, name string) float64 {
	r, _ := find(rs, name)
	return r.Rate
}

func ratio(rs []Result, name, base string) {
	baseRate := rateOf(rs, base)
	for i := range rs {
		if rs[i].Scenario == name && baseRate > 0 {
			rs[i].Ratio, rs[i].Baseline = rs[i].Rate/baseRate, base
		}
	}
}

// alsoRatio adds name's ratio to a second baseline to its note.
func alsoRatio(rs []Result, name, base string) {
	baseRate := rateOf(rs, base)
	for i := range rs {
		if rs[i].Scenario == name && baseRate > 0 {
			rs[i].Note += fmt.Sprintf("; %.2fx vs %s", rs[i].Rate/baseRate, strings.SplitN(base, ".", 2)[0])
		}
	}
}

func printTable(w io.Writer, rep Report) {
	fmt.Fprintf(w, "\norderflow bench: n=%d, concurrency=%d, %s, %s cores, %s memory\n", rep.N, rep.Concurrency,
		rep.Machine["os"], rep.Machine["cores"], rep.Machine["memory"])
	fmt.Fprintf(w, "stack: %s profile; %s\n\n", rep.Profile, rep.Machine["stack"])
	fmt.Fprintf(w, "| scenario | n | rate/s | p50 ms | p95 ms | p99 ms | ratio | note |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		ratio := ""
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.2fx (vs %s)", r.Ratio, strings.SplitN(r.Baseline, ".", 2)[0])
		}
		fmt.Fprintf(w, "| %s | %d | %.1f | %s | %s | %s | %s | %s |\n", r.Scenario, r.N, r.Rate, ms(r.P50ms), ms(r.P95ms), ms(r.P99ms), ratio, r.Note)
	}
	fmt.Fprintf(w, "\nCPU ms per operation, by process on the machine:\n\n| scenario | %s | total |\n|---|%s---|\n", strings.Join(cpuGroups, " | "), strings.Repeat("---|", len(cpuGroups)))
	for _, r := range rep.Results {
		if r.CPUPerOp == nil {
			continue
		}
		cells := make([]string, len(cpuGroups))
		for i, g := range cpuGroups {
			cells[i] = ms(r.CPUPerOp[g])
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", r.Scenario, strings.Join(cells, " | "), ms(cpuTotal(r)))
	}
	printEngine(w, rep.Results)
	if len(rep.Figures) > 0 {
		fmt.Fprintf(w, "\n| figure | orderflow | raw baseline | ratio | target | met |\n|---|---|---|---|---|---|\n")
		for _, f := range rep.Figures {
			ratio := "-"
			if f.Ratio > 0 {
				ratio = fmt.Sprintf("%.2fx", f.Ratio)
			}
			fmt.Fprintf(w, "| %s | %.2f | %s | %s | %s | %v |\n", f.Name, f.Value, ms(f.Baseline), ratio, f.Target, f.Met)
		}
	}
	fmt.Fprintf(w, "\n| process | peak RSS MiB | CPU s |\n|---|---|---|\n")
	for _, r := range rep.Resources {
		fmt.Fprintf(w, "| %s | %.1f | %.2f |\n", r.Process, r.PeakRSSMiB, r.CPUSeconds)
	}
	fmt.Fprintln(w)
}

// cpuTotal is r's CPU per operation summed over every process on the machine.
func cpuTotal(r Result) float64 {
	t := 0.0
	for _, v := range r.CPUPerOp {
		t += v
	}
	return t
}

// figures are the ratios the targets are stated in, for the scenarios that ran.
func figures(rs []Result) []Figure {
	var out []Figure
	ratioOf := func(name string, v, base, max float64, target string) {
		if base > 0 && v > 0 {
			r := math.Round(100*v/base) / 100 // judged as reported
			out = append(out, Figure{Name: name, Value: v, Baseline: base, Ratio: r, Target: target, Met: r <= max})
		}
	}
	if e2e, ok := find(rs, "6. "); ok {
		if one, ok := find(rs, "6a. "); ok {
			ratioOf("CPU ms per PAID order, every process (vs raw workflow of 1 activity)", cpuTotal(e2e), cpuTotal(one), 1.2, "≤ 1.2x")
		}
		if shape, ok := find(rs, "6b. "); ok {
			ratioOf("CPU ms per PAID order, every process (vs raw workflow of the order's shape)", cpuTotal(e2e), cpuTotal(shape), 1.2, "≤ 1.2x")
		}
	}
	out = append(out, engineFigures(rs)...)
	post, okPost := find(rs, "2. ")
	start, okStart := find(rs, "1. ")
	if okPost && okStart {
		// Temporal's CPU includes its own database's, where it shares PostgreSQL.
		ratioOf("API + PostgreSQL CPU ms per POST (vs Temporal's per raw start)",
			post.CPUPerOp["api"]+post.CPUPerOp["postgres"], start.CPUPerOp["temporal"]+start.CPUPerOp["temporal db"], 0.15, "≤ 0.15x")
	}
	if replay, ok := find(rs, "3. "); ok {
		out = append(out, Figure{Name: "API + PostgreSQL CPU ms per replay", Value: replay.CPUPerOp["api"] + replay.CPUPerOp["postgres"], Target: "-", Met: true})
		out = append(out, Figure{Name: "replay p99 ms at the run's concurrency", Value: replay.P99ms, Target: "≤ 8 ms", Met: replay.P99ms <= 8})
	}
	wait, okWait := find(rs, "8b. ")
	raw, okRaw := find(rs, "8e. ")
	if okWait && okRaw {
		ratioOf("Prefer: wait p50 ms at rest (vs raw Update-with-Start)", wait.P50ms, raw.P50ms, 1.2, "≤ 1.2x")
	}
	fairRest, ok1 := find(rs, "9a. ")
	fairDuring, ok2 := find(rs, "9b. ")
	if ok1 && ok2 {
		ratioOf("B's p50 ms during A's flood, fair task queues (vs B at rest)", fairDuring.P50ms, fairRest.P50ms, 2, "≤ 2x")
	}
	unfairDuring, ok3 := find(rs, "9e. ")
	if ok2 && ok3 {
		out = append(out, Figure{Name: "B's p99 ms during A's flood, fair task queues (vs without)", Value: fairDuring.P99ms,
			Baseline: unfairDuring.P99ms, Ratio: math.Round(100*fairDuring.P99ms/unfairDuring.P99ms) / 100, Target: "-", Met: true})
	}
	if take, ok := find(rs, "12. "); ok {
		cost := take.CPUPerOp["load generator"] + take.CPUPerOp["postgres"]
		for _, p := range []struct{ prefix, name string }{{"2. ", "a POST's"}, {"3. ", "a replayed POST's"}} {
			if post, ok := find(rs, p.prefix); ok {
				ratioOf("CPU ms of the fleet budget per request (vs "+p.name+" API + PostgreSQL)", cost, post.CPUPerOp["api"]+post.CPUPerOp["postgres"], 1, "-")
			}
		}
	}
	fairA, ok1 := find(rs, "9c. ")
	unfairA, ok2 := find(rs, "9f. ")
	if ok1 && ok2 {
		ratioOf("seconds to pay A's flood, fair task queues (vs without)", fairA.Seconds, unfairA.Seconds, 1.1, "≤ 1.1x")
	}
	for _, p := range []struct{ who, before, this string }{{"new customers", newBefore, newThis}, {"returning customers", returningBefore, returningThis}} {
		before, ok1 := find(rs, p.before)
		this, ok2 := find(rs, p.this)
		if ok1 && ok2 {
			ratioOf("CPU per order with per-customer keys, "+p.who+" (ratio to the build before)", cpuTotal(this), cpuTotal(before), 1.10, "≤ 1.10×")
		}
	}
	return out
}

var cpuGroups = []string{"temporal", "temporal db", "postgres", "kafka", "api", "worker", "paysim", "dbos", "load generator", "other"}

func ms(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func machine(ctx context.Context, profile string) map[string]string {
	m := map[string]string{"os": runtime.GOOS + "/" + runtime.GOARCH, "cores": fmt.Sprint(runtime.NumCPU()), "go": runtime.Version()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb); err == nil {
			m["memory"] = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	// As scripts/stack starts each profile.
	stack := "PostgreSQL 15, Temporal CLI v1.5.1 dev server (SQLite WAL), Kafka 4.1.1 single KRaft node"
	if profile == "cluster" {
		stack = "PostgreSQL 15 (orderflow's and Temporal's databases), Temporal server v1.32.2 (PostgreSQL, 4 history shards), " +
			"Kafka 4.1.1 three KRaft nodes (replication factor 3, min.insync.replicas 2)"
	}
	m["stack"] = stack + ", kafka-go " + moduleVersion("github.com/segmentio/kafka-go") + ", Temporal Go SDK " + moduleVersion("go.temporal.io/sdk")
	return m
}

// moduleVersion is the version of a dependency built into this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "?"
}
