package operator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/segmentio/kafka-go"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/settings"
	"github.com/orderflow/orderflow/workflows"
)

// layout is what worker bootstrap creates.
type layout struct {
	partitions, replicas int
	retention            time.Duration // of the Temporal namespace's closed workflows
}

// bootstrapCommand is `worker bootstrap`, its flags checked.
func bootstrapCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var l layout
	return cli.Command{Name: "bootstrap", Args: "[--partitions N] [--replication-factor N] [--retention D]",
		Summary: "create the Temporal namespace, its search attributes and the Kafka topics, leaving what exists alone (TEMPORAL_*, KAFKA_*, the topics' names)",
		Flags: func(fs *flag.FlagSet) {
			fs.IntVar(&l.partitions, "partitions", 12, "partitions of the requests and events topics (the dead-letter topic has 1)")
			fs.IntVar(&l.replicas, "replication-factor", 3, "replicas of each topic")
			fs.DurationVar(&l.retention, "retention", 72*time.Hour, "how long Temporal keeps closed workflows")
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() > 0 || l.partitions < 1 || l.replicas < 1 || l.retention < 24*time.Hour {
				return cli.Usagef("want positive --partitions and --replication-factor, --retention of a day or more, no argument")
			}
			return bootstrap(ctx, getenv, l, stdout)
		}}
}

// bootstrap is `worker bootstrap`: it creates the Temporal namespace, its search
// attributes and the Kafka topics orderflow needs, and leaves alone what exists
// (safe on every rollout). It reads TEMPORAL_*, KAFKA_* and the topics' names, nothing else.
func bootstrap(ctx context.Context, getenv func(string) string, l layout, stdout io.Writer) error {
	e := config.New(getenv)
	conn, cluster := e.Temporal(), e.Kafka()
	events, requests, dlq := settings.Topics(e)
	interval, _ := e.Reconcile()
	queue := e.String("TASK_QUEUE", "orders")
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if err := createNamespace(ctx, conn, l.retention, stdout); err != nil {
		return err
	}
	if err := registerSearchAttributes(ctx, conn, stdout); err != nil {
		return err
	}
	if err := scheduleReconcile(ctx, conn, queue, interval, stdout); err != nil {
		return err
	}
	for _, t := range []struct {
		name       string
		partitions int
	}{{requests, l.partitions}, {events, l.partitions}, {dlq, 1}} {
		n, err := kafkaclient.Partitions(ctx, cluster, t.name)
		switch {
		case err != nil:
			return err
		case n > 0:
			fmt.Fprintf(stdout, "topic %s exists: %d partitions\n", t.name, n)
			continue
		}
		err = kafkaclient.CreateTopic(ctx, cluster, t.name, t.partitions, l.replicas)
		if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) { // another pod made it meanwhile
			return err
		}
		fmt.Fprintf(stdout, "topic %s created: %d partitions, replication factor %d\n", t.name, t.partitions, l.replicas)
	}
	return nil
}

// createNamespace registers the namespace unless it exists (on Temporal Cloud it
// always does: namespaces are made there, not here).
func createNamespace(ctx context.Context, opts client.Options, retention time.Duration, stdout io.Writer) error {
	nc, err := client.NewNamespaceClient(opts)
	if err != nil {
		return fmt.Errorf("temporal at %s: %w", opts.HostPort, err)
	}
	defer nc.Close()
	_, err = nc.Describe(ctx, opts.Namespace)
	var missing *serviceerror.NamespaceNotFound
	switch {
	case err == nil:
		fmt.Fprintf(stdout, "namespace %s exists\n", opts.Namespace)
		return nil
	case !errors.As(err, &missing):
		return fmt.Errorf("describe namespace %s: %w", opts.Namespace, err)
	}
	err = nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: opts.Namespace, WorkflowExecutionRetentionPeriod: durationpb.New(retention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("register namespace %s: %w", opts.Namespace, err)
	}
	fmt.Fprintf(stdout, "namespace %s registered: retention %s\n", opts.Namespace, retention)
	return nil
}

// scheduleReconcile creates the Schedule that starts a reconcile pass every
// interval on queue, one at a time (a pass still running skips the next), or sets
// the interval of the one that exists. A namespace registered a moment ago may
// not take it yet: it is asked again for up to a minute.
func scheduleReconcile(ctx context.Context, opts client.Options, queue string, interval time.Duration, stdout io.Writer) error {
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return fmt.Errorf("temporal at %s: %w", opts.HostPort, err)
	}
	defer c.Close()
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: interval}}}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err = c.ScheduleClient().Create(ctx, client.ScheduleOptions{
			ID: workflows.ReconcileSchedule, Spec: spec, Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
			Action: &client.ScheduleWorkflowAction{ID: workflows.ReconcileSchedule, Workflow: workflows.Reconcile, TaskQueue: queue},
		})
		var missing *serviceerror.NamespaceNotFound
		if !errors.As(err, &missing) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		err = c.ScheduleClient().GetHandle(ctx, workflows.ReconcileSchedule).Update(ctx, client.ScheduleUpdateOptions{
			DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
				in.Description.Schedule.Spec = &spec
				return &client.ScheduleUpdate{Schedule: &in.Description.Schedule}, nil
			},
		})
	}
	if err != nil {
		return fmt.Errorf("schedule %s: %w", workflows.ReconcileSchedule, err)
	}
	fmt.Fprintf(stdout, "schedule %s: a reconcile pass every %s\n", workflows.ReconcileSchedule, interval)
	return nil
}
