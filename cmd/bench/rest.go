package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/orders/order"
)

// restOps is how many operations each row of scenario 8 measures, one at a time.
const restOps = 50

// 8. Latency at rest: one client, nothing else running, each operation of the
// service beside the raw Temporal call it rests on.

// 8a. POST, answered 202.
func (b *bench) restPost(ctx context.Context) (Result, error) {
	lat, total, err := measure(restOps, 1, func(i int) error {
		return b.accepted(fmt.Sprintf("rest-%d", i))
	})
	if err != nil {
		return Result{Scenario: "8a. at rest: POST → 202"}, err
	}
	// Let them finish, so the next row runs with nothing else.
	ids := make([]string, restOps)
	for i := range ids {
		ids[i] = order.IDFor(order.WorkflowID(b.tenant, order.FromHTTP, fmt.Sprintf("rest-%d", i)))
	}
	err = b.until(ctx, 2*time.Minute, func() bool { return b.paid(ctx, ids...) })
	return result("8a. at rest: POST → 202", restOps, total, lat), err
}

// 8b. POST with Prefer: wait, answered 201 PAID.
func (b *bench) restWait(ctx context.Context) (Result, error) {
	return b.restWaitAs("8b. at rest: POST, Prefer: wait → 201 PAID", "rest-wait")
}

// 8f. 8b on a worker with EAGER_DISPATCH=true.
func (b *bench) restWaitEager(ctx context.Context) (Result, error) {
	return b.withEager(ctx, func(context.Context) (Result, error) {
		return b.restWaitAs("8f. at rest: POST, Prefer: wait → 201 PAID, eager dispatch", "rest-wait-eager")
	})
}

func (b *bench) restWaitAs(name, prefix string) (Result, error) {
	key := func(i int) string { return fmt.Sprintf("%s-%d", prefix, i) }
	b.sampleHistories(name, func(i int) string { return order.WorkflowID(b.tenant, order.FromHTTP, key(i)) })
	lat, total, err := measure(restOps, 1, func(i int) error {
		return b.paidWithin(key(i), 30*time.Second)
	})
	return result(name, restOps, total, lat), err
}

// 8c. The keys of 8a again: replays.
func (b *bench) restReplay(ctx context.Context) (Result, error) {
	lat, total, err := measure(restOps, 1, func(i int) error {
		return b.replayed(fmt.Sprintf("rest-%d", i))
	})
	return result("8c. at rest: replay", restOps, total, lat), err
}

// 8d. One event on the requests topic until its order is PAID in Postgres.
func (b *bench) restEvent(ctx context.Context) (Result, error) {
	return b.restEventAs(ctx, "8d. at rest: event → PAID", "rest-event")
}

// 8g. 8d on a worker with EAGER_DISPATCH=true: its consumer's starts ask for the
// first workflow task inline.
func (b *bench) restEventEager(ctx context.Context) (Result, error) {
	return b.withEager(ctx, func(ctx context.Context) (Result, error) {
		return b.restEventAs(ctx, "8g. at rest: event → PAID, eager dispatch", "rest-event-eager")
	})
}

func (b *bench) restEventAs(ctx context.Context, name, prefix string) (Result, error) {
	b.sampleHistories(name, func(i int) string {
		return order.WorkflowID(b.tenant, order.FromEvent, fmt.Sprintf("%s-%d", prefix, i))
	})
	if err := b.consumeRequests("-rest"); err != nil {
		return Result{Scenario: name}, err
	}
	w := &kafka.Writer{Addr: kafka.TCP(b.kafka.Brokers...), Topic: b.topics["requests"], Balancer: &kafka.RoundRobin{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Transport: b.kafka.Transport()}
	defer w.Close()
	lat, total, err := measure(restOps, 1, func(i int) error {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if err := w.WriteMessages(ctx, kafka.Message{Value: []byte(fmt.Sprintf(`{"eventId":%q,"tenant":%q,"order":%s}`, id, b.tenant, orderJSON))}); err != nil {
			return err
		}
		orderID := order.IDFor(order.WorkflowID(b.tenant, order.FromEvent, id))
		return b.until(ctx, time.Minute, func() bool { return b.paid(ctx, orderID) })
	})
	return result(name, restOps, total, lat), err
}

// 8e. The raw baseline of 8b: Update-with-Start of a workflow of the order's shape
// (four no-op activities) whose update returns after the second (the charge).
func (b *bench) restRawUpdateWithStart(ctx context.Context) (Result, error) {
	lat, total, err := measure(restOps, 1, func(i int) error {
		op := b.tc.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
			ID: fmt.Sprintf("raw-uws-%s-%d", b.run, i), TaskQueue: b.rawQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		}, "bench.RawShapeSettled")
		h, err := b.tc.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: op,
			UpdateOptions: client.UpdateWorkflowOptions{UpdateName: "settled", WaitForStage: client.WorkflowUpdateStageCompleted}})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		return err
	})
	return result("8e. baseline: raw Update-with-Start, order's shape, answered after the charge", restOps, total, lat), err
}

// rawShapeSettled is rawShape with an update that answers once the second
// activity (the charge) is done.
func rawShapeSettled(ctx workflow.Context) error {
	charged := false
	if err := workflow.SetUpdateHandler(ctx, "settled", func(ctx workflow.Context) error {
		return workflow.Await(ctx, func() bool { return charged })
	}); err != nil {
		return err
	}
	ctx = rawOptions(ctx)
	for step := range 4 { // record, charge, mark paid, publish
		if err := workflow.ExecuteActivity(ctx, "bench.noop").Get(ctx, nil); err != nil {
			return err
		}
		charged = charged || step == 1
	}
	return workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
}

// latencyRatio adds name's p50 against base's to its note.
func latencyRatio(rs []Result, name, base string) {
	r, _ := find(rs, base)
	p50 := r.P50ms
	for i := range rs {
		if rs[i].Scenario == name && p50 > 0 {
			rs[i].Note += fmt.Sprintf("p50 %.2fx the raw Update-with-Start's (%s)", rs[i].P50ms/p50, strings.SplitN(base, ".", 2)[0])
		}
	}
}
