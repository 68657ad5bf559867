package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	orderflow "github.com/orderflow/orderflow/client"
	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/platform/temporalclient"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/quota"
	"github.com/orderflow/orderflow/testkit"
)

// bench holds the processes and connections of one run.
type bench struct {
	n, conc int
	out     io.Writer
	env     map[string]string
	run     string // unique suffix of this run's names
	pool    *pgxpool.Pool
	tc      client.Client
	kafka   kafkaclient.Cluster
	tenant  string
	apiKey  string
	queue   string
	group   string
	topics  map[string]string // role -> topic name
	apiURL  string
	simURL  string
	bins    string // the folder the api and worker start from (scenario 14 swaps it)
	base    string // the api and worker of the build before per-customer keys (scenario 14)
	procs   []*testkit.Proc
	procEnv map[string]string
	workerN int
	ops     string       // the ops listener of the last worker started
	hc      *http.Client // the load's client: a kept-alive connection per concurrent client, as real clients keep
	retired []Resources  // of the processes stopped before the end

	rawQueue  string // the baselines' task queue and worker (in this process)
	rawWorker worker.Worker
	started   int    // orders started so far, all of which must end PAID
	consuming string // the requests topic of the running worker

	other, otherKey string              // scenario 9's tenant B and its API key (A is other+"-a")
	api, otherAPI   *orderflow.Client   // the clients of the tenant and of B, made once
	flooded         int                 // A's events so far
	paymentsRate    string              // the workers' PAYMENTS_RATE; "0" (none) unless set
	stack           string              // the stack's script
	rows            int                 // scenario 10's rows added to each grown table
	histories       map[string][]string // scenario -> the workflows whose histories are counted
}

func setup(ctx context.Context, env map[string]string, bins string, n, conc int, out io.Writer) (*bench, error) {
	b := &bench{n: n, conc: conc, out: out, env: env, run: testkit.Name("bench")[len("bench-"):], bins: bins, topics: map[string]string{},
		hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * conc}}}
	var err error
	if b.kafka, err = testkit.Kafka(env); err != nil {
		return nil, err
	}
	b.tenant, b.queue, b.group = "bench-"+b.run, "bench-"+b.run, "bench-"+b.run
	b.other = "bench-other-" + b.run
	if err := b.connect(ctx, env); err != nil {
		return nil, err
	}
	simAddr, err := testkit.FreeAddr()
	if err != nil {
		return nil, err
	}
	apiAddr, err := testkit.FreeAddr()
	if err != nil {
		return nil, err
	}
	b.simURL, b.apiURL = "http://"+simAddr, "http://"+apiAddr
	if b.api, err = b.newClient(b.apiKey); err != nil {
		return nil, err
	}
	b.procEnv = testkit.Connections(env, map[string]string{
		"TASK_QUEUE": b.queue, "EVENTS_TOPIC": b.topics["events"], "DLQ_TOPIC": b.topics["dlq"],
		"CONSUMER_GROUP": b.group, "PAYMENTS_URL": b.simURL, "LOG_LEVEL": "warn", "DRAIN_DELAY": "0s", "PAYMENT_LOOKUP_DELAY": "2s",
		"CONSUMER_IN_FLIGHT": strconv.Itoa(conc), "PAYMENTS_WEBHOOK_SECRETS": benchWebhookSecret,
		// Scenario 10 prunes by itself, at the moment it measures.
		"PRUNE_INTERVAL": "24h",
		// The start scenarios measure the API with no worker: a fleet that closes
		// nothing would refuse them past the floor. Overload runs with the bound.
		"BACKLOG_ACCEPT": "0",
	})
	if err := b.start("paysim", map[string]string{"PAYSIM_ADDR": simAddr}, b.simURL+"/healthz"); err != nil {
		return nil, err
	}
	// This worker runs the workflows of every scenario; its consumer reads an idle
	// topic so that the ingress scenario can start a consumer on pre-produced events.
	if err := b.startWorker(b.topics["idle"]); err != nil {
		return nil, err
	}
	apiOps, err := testkit.FreeAddr()
	if err != nil {
		return nil, err
	}
	if err := b.start("api", map[string]string{"API_ADDR": apiAddr, "OPS_ADDR": apiOps}, "http://"+apiOps+"/readyz"); err != nil {
		return nil, err
	}
	if err := b.startRawWorker(); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "bench run %s: n=%d, concurrency=%d, task queue %s\n", b.run, n, conc, b.queue)
	return b, nil
}

// connect opens the bench's pool (migrated), its tenant's key with a budget that
// is not the limit, its Temporal client and its topics.
func (b *bench) connect(ctx context.Context, env map[string]string) error {
	var err error
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	if b.pool, err = database.Open(ctx, env["DATABASE_URL"], 20, nil); err != nil {
		return err
	}
	if err := database.Migrate(ctx, b.pool, logger); err != nil {
		return err
	}
	if b.apiKey, err = apikeys.New(b.pool, apikeys.DefaultCacheTTL).Create(ctx, b.tenant); err != nil {
		return err
	}
	// The bench measures capacity: its tenant's request budget is not the limit.
	if err := quota.NewStore(b.pool).Set(ctx, b.tenant, quota.Limit{Rate: 1e6, Burst: 1e6}); err != nil {
		return err
	}
	ring, err := payloadcodec.ParseKeyring(env["PAYLOAD_KEYS"])
	if err != nil {
		return fmt.Errorf("PAYLOAD_KEYS: %w", err)
	}
	conn, err := temporalclient.LoadConnection(func(k string) (string, bool) { v := env[k]; return v, v != "" })
	if err != nil {
		return err
	}
	if b.tc, err = temporalclient.Dial(ctx, temporalclient.Settings{Connection: conn, Codec: payloadcodec.New(ring), Logger: logger}); err != nil {
		return err
	}
	for _, role := range []string{"events", "requests", "idle", "dlq", "plain", "growth-ge", "growth-gf"} {
		b.topics[role] = "bench-" + role + "-" + b.run
		if err := kafkaclient.CreateTopic(ctx, b.kafka, b.topics[role], 4, testkit.Replicas(env)); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) startWorker(requestsTopic string) error {
	b.workerN++
	ops, err := testkit.FreeAddr()
	if err != nil {
		return err
	}
	b.ops, b.consuming = ops, requestsTopic
	// PAYMENTS_RATE: the sandbox is no account with a limit, unless the scenario
	// says otherwise (paymentsRate).
	rate := cmp.Or(b.paymentsRate, "0")
	return b.start(fmt.Sprintf("worker-%d", b.workerN), map[string]string{"REQUESTS_TOPIC": requestsTopic, "OPS_ADDR": ops,
		"PAYMENTS_RATE": rate}, "http://"+ops+"/readyz")
}

// replaceWorker stops the running worker and starts another that consumes
// requestsTopic: the fleet stays one worker, as in the baseline.
func (b *bench) replaceWorker(requestsTopic string) error {
	b.stopWorker()
	return b.startWorker(requestsTopic)
}

// stopWorker stops the order worker, if one runs (its drain included).
func (b *bench) stopWorker() {
	if i := slices.IndexFunc(b.procs, isWorker); i >= 0 {
		p := b.procs[i]
		b.retired = append(b.retired, measureProc(p))
		p.Stop(30 * time.Second)
		b.procs = slices.Delete(b.procs, i, i+1)
	}
}

// workerRuns says whether an order worker runs.
func (b *bench) workerRuns() bool {
	return slices.ContainsFunc(b.procs, isWorker)
}

// isWorker says whether p is an order worker (worker-N).
func isWorker(p *testkit.Proc) bool { return strings.HasPrefix(p.Name, "worker-") }

// start runs one of the binaries with the run's environment plus extra, and waits
// until ready answers 200.
func (b *bench) start(name string, extra map[string]string, ready string) error {
	env := maps.Clone(b.procEnv)
	maps.Copy(env, extra)
	p, err := testkit.Start(filepath.Join(b.bins, strings.SplitN(name, "-", 2)[0]), env, "")
	if err != nil {
		return err
	}
	p.Name = name
	b.procs = append(b.procs, p)
	return p.WaitReady(ready, 30*time.Second)
}

func (b *bench) close() {
	if b.rawWorker != nil {
		b.rawWorker.Stop()
	}
	for _, p := range b.procs {
		p.Signal(syscall.SIGTERM)
	}
	for _, p := range b.procs {
		p.Stop(30 * time.Second)
	}
	if b.tc != nil {
		b.tc.Close()
	}
	if b.pool != nil {
		b.pool.Close()
	}
}

// Resources are one process's peak memory and CPU time.
type Resources struct {
	Process    string  `json:"process"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	CPUSeconds float64 `json:"cpu_seconds"`
}

// resources reads VmHWM and utime+stime of every process, the retired ones as
// they were when stopped.
func (b *bench) resources() []Resources {
	out := slices.Clone(b.retired)
	for _, p := range b.procs {
		out = append(out, measureProc(p))
	}
	return out
}

// cpuSeconds is the CPU time so far of the running api and worker processes.
func (b *bench) cpuSeconds() float64 {
	var s float64
	for _, p := range b.procs {
		if p.Name == "api" || isWorker(p) {
			s += measureProc(p).CPUSeconds
		}
	}
	return s
}

func measureProc(p *testkit.Proc) Resources {
	pid := p.Pid()
	r := Resources{Process: p.Name}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
				r.PeakRSSMiB = kb / 1024
			}
		}
	}
	if _, cpu, ok := procCPU(strconv.Itoa(pid)); ok {
		r.CPUSeconds = cpu
	}
	return r
}
