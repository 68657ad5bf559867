package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"

	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/telemetry"
)

// Consumer is the Kafka ingress as the worker process runs it.
type Consumer interface {
	// Run consumes until ctx ends; on return it has committed what it settled.
	Run(ctx context.Context) error
}

// Closer is a Kafka reader or writer, closed in the stop sequence.
type Closer struct {
	Name  string
	Close func() error
}

// Deps are what the worker process runs. Consumer may be nil.
type Deps struct {
	Logger     *slog.Logger
	Temporal   client.Client
	Activities Activities
	Consumer   Consumer
	Writers    []Closer // closed after the Temporal worker stops: activities write to them
	Registry   *prometheus.Registry
	Ready      *telemetry.Readiness
	// Codec is the Temporal Web UI's codec endpoint, guarded (codecauth), served
	// on its own listener at /codec/; nil for none.
	Codec http.Handler
	// Console is the operator console, served on its own listener; nil for none.
	Console http.Handler
}

// RunOptions are the worker's limits plus its process settings.
type RunOptions struct {
	Options
	OpsAddr string
	// CodecAddr is the codec's listener, off the ops port: metrics are scraped by
	// more callers than may decrypt.
	CodecAddr string
	// ConsoleAddr is the operator console's listener; "" for none.
	ConsoleAddr string
	// ShutdownTimeout bounds the whole stop sequence; KafkaCloseTimeout each close.
	ShutdownTimeout   time.Duration
	KafkaCloseTimeout time.Duration
}

// Run starts the ops server, the Temporal worker and the consumer, and on ctx's end
// (SIGTERM) stops them in order (guarantee 5): readiness off; the consumer stops
// fetching, lets its in-flight starts finish, commits what settled and leaves the
// group; the Temporal worker gives running activities StopTimeout and hands the
// rest back; the Kafka writers flush and close; the ops server stops. The caller closes the Temporal client and
// the pool after Run returns. A component failing early stops the rest the same way.
func Run(ctx context.Context, d Deps, o RunOptions) error {
	shutdownSeconds := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "orderflow_worker_shutdown_duration_seconds",
		Help: "How long the last drain took, from SIGTERM to the Kafka writers closing.",
	})
	d.Registry.MustRegister(shutdownSeconds)
	o.Interceptors = append(o.Interceptors, NewRetryWatch(d.Registry), TenantOfTasks())

	ops, ln, err := opsServer(d, o.OpsAddr)
	if err != nil {
		return err
	}
	sides, err := sideServers(d, o)
	if err != nil {
		ln.Close()
		return err
	}
	w := New(d.Temporal, o.Options, d.Activities)
	if err := w.Start(); err != nil {
		ln.Close()
		for _, s := range sides {
			s.ln.Close()
		}
		return fmt.Errorf("start temporal worker: %w", err)
	}

	g, gctx := errgroup.WithContext(ctx)
	serveIn(g, "ops server", ops, ln)
	for _, s := range sides {
		serveIn(g, s.name, s.srv, s.ln)
	}
	// The consumer's context is its own, so the stop sequence ends it in order.
	consumerCtx, stopConsumer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopConsumer()
	consumerDone := make(chan struct{})
	if d.Consumer == nil {
		close(consumerDone)
	} else {
		g.Go(func() error {
			defer close(consumerDone)
			err := d.Consumer.Run(consumerCtx)
			if consumerCtx.Err() == nil {
				return stoppedEarly(err)
			}
			return nil
		})
	}
	d.Logger.Info("worker started", "task_queue", o.TaskQueue, "ops", ln.Addr().String())

	<-gctx.Done() // SIGTERM, or a component failed
	began := time.Now()
	d.Logger.Info("draining", "budget", o.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	steps := []step{
		{"readiness off", func(context.Context) error { d.Ready.Drain(); return nil }},
		{"consumer", func(ctx context.Context) error {
			stopConsumer() // stop fetching; in-flight starts finish, then commit and leave
			return waitDone(ctx, consumerDone)
		}},
		{"temporal worker", func(context.Context) error { w.Stop(); return nil }},
	}
	for _, c := range d.Writers {
		steps = append(steps, c.step(o.KafkaCloseTimeout))
	}
	for _, s := range sides {
		steps = append(steps, step{s.name, s.srv.Shutdown})
	}
	steps = append(steps, step{"ops server", func(ctx context.Context) error {
		shutdownSeconds.Set(time.Since(began).Seconds())
		return ops.Shutdown(ctx)
	}})
	runSteps(sctx, steps, d.Logger)
	d.Logger.Info("stopped", "took", time.Since(began).String())
	return g.Wait()
}

// serveIn serves srv on ln in g until it is shut down.
func serveIn(g *errgroup.Group, name string, srv *http.Server, ln net.Listener) {
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	})
}

// stoppedEarly is the error of a consumer that returned before it was stopped.
func stoppedEarly(err error) error {
	if err == nil {
		return errors.New("consumer stopped unexpectedly")
	}
	return fmt.Errorf("consumer stopped unexpectedly: %w", err)
}

func opsServer(d Deps, addr string) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	telemetry.Mount(mux, d.Registry, d.Ready)
	return telemetry.OpsServer(mux), ln, nil
}

// sideServer is a listener of its own beside the ops port: the codec, the
// console.
type sideServer struct {
	name string
	srv  *http.Server
	ln   net.Listener
}

// sideServers listens for the codec and the console, those the worker serves;
// on an error it closes what it opened.
func sideServers(d Deps, o RunOptions) ([]sideServer, error) {
	var out []sideServer
	for _, s := range []struct {
		name, addr, pattern string
		h                   http.Handler
	}{{"codec server", o.CodecAddr, "/codec/", d.Codec}, {"console server", o.ConsoleAddr, "/", d.Console}} {
		if s.h == nil || s.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			for _, o := range out {
				o.ln.Close()
			}
			return nil, fmt.Errorf("%s: listen on %s: %w", s.name, s.addr, err)
		}
		mux := http.NewServeMux()
		mux.Handle(s.pattern, s.h)
		out = append(out, sideServer{s.name, telemetry.OpsServer(mux), ln})
	}
	return out, nil
}

func waitDone(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.New("did not stop within the shutdown budget")
	}
}

// step is one named stage of the stop sequence.
type step struct {
	name string
	run  func(ctx context.Context) error
}

func (c Closer) step(timeout time.Duration) step {
	return step{"kafka " + c.Name, func(ctx context.Context) error {
		if c.Close == nil {
			return nil
		}
		return kafkaclient.Close(ctx, timeout, c.Close)
	}}
}

// runSteps runs every step in order under ctx's budget, logging each with its
// duration; a failed step is logged and the sequence goes on, since what follows
// (flushing writers, closing the pool) matters more than what failed.
func runSteps(ctx context.Context, steps []step, logger *slog.Logger) {
	for _, s := range steps {
		began := time.Now()
		err := s.run(ctx)
		took := time.Since(began).Round(time.Millisecond).String()
		if err != nil {
			logger.Error("stop step failed", "step", s.name, "took", took, "err", err)
			continue
		}
		logger.Info("stop step done", "step", s.name, "took", took)
	}
}
