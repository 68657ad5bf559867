package main

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The end-to-end baselines: raw workflows on a worker inside the bench process, on
// a task queue of their own, with activities that do nothing. (a) has one
// activity; (b) has the order workflow's shape: record, charge, mark paid, publish, each
// a regular activity. They measure what the engine allows on this machine for that
// many steps, so the end-to-end rate has something to be compared with.

func noop(context.Context) error { return nil }

func rawOne(ctx workflow.Context) error {
	return workflow.ExecuteActivity(rawOptions(ctx), "bench.noop").Get(ctx, nil)
}

func rawShape(ctx workflow.Context) error {
	ctx = rawOptions(ctx)
	for range 4 { // record, charge, mark paid, publish
		if err := workflow.ExecuteActivity(ctx, "bench.noop").Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func rawOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second, RetryPolicy: &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond},
	})
}

// startRawWorker runs the baselines' worker until the bench ends, with the order
// worker's limits.
func (b *bench) startRawWorker() error {
	b.rawQueue = "bench-raw-" + b.run
	w := worker.New(b.tc, b.rawQueue, worker.Options{MaxConcurrentActivityExecutionSize: 100, MaxConcurrentWorkflowTaskExecutionSize: 50})
	w.RegisterWorkflowWithOptions(rawOne, workflow.RegisterOptions{Name: "bench.RawOne"})
	w.RegisterWorkflowWithOptions(rawShape, workflow.RegisterOptions{Name: "bench.RawShape"})
	w.RegisterWorkflowWithOptions(rawShapeSettled, workflow.RegisterOptions{Name: "bench.RawShapeSettled"})
	w.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: "bench.noop"})
	if err := w.Start(); err != nil {
		return fmt.Errorf("baseline worker: %w", err)
	}
	b.rawWorker = w
	return nil
}

func (b *bench) rawWorkflows(ctx context.Context, name, workflowType string) (Result, error) {
	id := func(i int) string { return fmt.Sprintf("%s-%s-%d", workflowType, b.run, i) }
	b.sampleHistories(name, id)
	lat, total, err := measure(b.n, b.conc, func(i int) error {
		run, err := b.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id(i), TaskQueue: b.rawQueue}, workflowType)
		if err != nil {
			return err
		}
		return run.Get(ctx, nil)
	})
	return result(name, b.n, total, lat), err
}

// 6a. Raw workflow with one no-op activity, start to completion.
func (b *bench) baselineOneActivity(ctx context.Context) (Result, error) {
	return b.rawWorkflows(ctx, "6a. baseline: raw workflow, 1 no-op activity", "bench.RawOne")
}

// 6b. Raw workflow of the order workflow's shape (4 no-op activities), start to completion.
func (b *bench) baselineOrderShape(ctx context.Context) (Result, error) {
	return b.rawWorkflows(ctx, "6b. baseline: raw workflow, order's shape (4 no-op activities)", "bench.RawShape")
}
