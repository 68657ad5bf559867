//go:build stack

package consumer_test

import (
	"context"
	"testing"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker/workertest"
)

// An event produced inside a trace becomes one trace: the consumer's span is the
// producer's child, and the workflow start, the run, the charge with its provider
// call, and the OrderPaid publish hang under it.
func TestEventIsOneTrace(t *testing.T) {
	p := newPipeline(t)
	exp := p.Traced(t)
	p.StartWorker(t)
	_, stop := p.runConsumer(t)
	defer stop()

	ctx, producer := p.Tracing.Tracer().Start(context.Background(), "test producer", trace.WithSpanKind(trace.SpanKindProducer))
	headers := p.Tracing.Inject(ctx, nil)
	producer.End()
	p.produce(t, kafka.Message{Key: []byte("k"), Value: event(stacktest.Name("ev"), p.tenant), Headers: headers})

	edges := append([]workertest.Edge{{Parent: "test producer", Child: "consume "}}, workertest.OrderEdges("consume ")...)
	spans := workertest.WaitTrace(t, exp, edges...)
	t.Logf("trace of one event:\n%s", workertest.Tree(spans))
}
