package workertest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/orderflow/orderflow/platform/tracing"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// Traced records every span of the pipeline in memory: the worker's activities and
// a Temporal client (h.Temporal, for starts and the worker) with the SDK's tracing
// interceptor. Call it before StartWorker.
func (h *Orders) Traced(tb testing.TB) *tracetest.InMemoryExporter {
	tb.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tb.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	h.Tracing = tracing.With(tp)
	traced, err := h.Tracing.Temporal()
	if err != nil {
		tb.Fatal(err)
	}
	h.Temporal = stacktest.TemporalWithKeys(tb, h.Env["PAYLOAD_KEYS"], traced)
	return exp
}

// Edge is a parent span's name and its child's, both by prefix.
type Edge struct{ Parent, Child string }

// OrderEdges are the links of a paid order's trace below root, the span that
// started its workflow: the start, the run, the activity that creates and confirms
// the intent with its provider calls, the OrderPaid publish.
func OrderEdges(root string) []Edge {
	return []Edge{
		{Parent: root, Child: "StartWorkflow:Order"},
		{Parent: "StartWorkflow:Order", Child: "RunWorkflow:Order"},
		{Parent: "RunWorkflow:Order", Child: "StartActivity:PayIntent"},
		{Parent: "StartActivity:PayIntent", Child: "RunActivity:PayIntent"},
		{Parent: "RunActivity:PayIntent", Child: "HTTP POST"},
		{Parent: "RunWorkflow:Order", Child: "StartActivity:Publish"},
		{Parent: "StartActivity:Publish", Child: "RunActivity:Publish"},
		{Parent: "RunActivity:Publish", Child: "publish OrderPaid"},
	}
}

// WaitTrace waits until the exporter holds an ended span of every name the edges
// give (by prefix: the workflow's run ends last), then checks that one trace holds
// every edge as a parent-child link; it returns the trace's spans.
func WaitTrace(tb testing.TB, exp *tracetest.InMemoryExporter, edges ...Edge) tracetest.SpanStubs {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var spans tracetest.SpanStubs
	for {
		spans = exp.GetSpans()
		missing := ""
		for _, e := range edges {
			for _, name := range []string{e.Parent, e.Child} {
				if !slices.ContainsFunc(spans, func(s tracetest.SpanStub) bool { return strings.HasPrefix(s.Name, name) }) {
					missing = name
				}
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no span %q after 30s; spans: %s", missing, names(spans))
		}
		time.Sleep(50 * time.Millisecond)
	}
	find := func(prefix string) []tracetest.SpanStub {
		var out []tracetest.SpanStub
		for _, s := range spans {
			if strings.HasPrefix(s.Name, prefix) {
				out = append(out, s)
			}
		}
		return out
	}
	trace := spans[0].SpanContext.TraceID()
	for _, e := range edges {
		parents, children := find(e.Parent), find(e.Child)
		ok := false
		for _, p := range parents {
			for _, c := range children {
				if c.Parent.SpanID() == p.SpanContext.SpanID() && c.SpanContext.TraceID() == p.SpanContext.TraceID() {
					ok, trace = true, c.SpanContext.TraceID()
				}
			}
		}
		if !ok {
			tb.Errorf("no span %q (%d) is the child of a span %q (%d)", e.Child, len(children), e.Parent, len(parents))
		}
	}
	var inTrace tracetest.SpanStubs
	for _, s := range spans {
		if s.SpanContext.TraceID() == trace {
			inTrace = append(inTrace, s)
		}
	}
	for _, e := range edges {
		for _, name := range []string{e.Parent, e.Child} {
			if !slices.ContainsFunc(inTrace, func(s tracetest.SpanStub) bool { return strings.HasPrefix(s.Name, name) }) {
				tb.Errorf("span %q is not in the order's trace", name)
			}
		}
	}
	if tb.Failed() {
		tb.Logf("spans: %s", names(spans))
	}
	return inTrace
}

func names(spans tracetest.SpanStubs) string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+" ["+s.SpanContext.SpanID().String()+" <- "+s.Parent.SpanID().String()+"]")
	}
	return strings.Join(out, ", ")
}

// Tree prints the trace as an indented tree of span names and durations.
func Tree(spans tracetest.SpanStubs) string {
	var b strings.Builder
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range spans {
			if s.Parent.SpanID().String() == parent {
				b.WriteString(strings.Repeat("  ", depth) + s.Name + " " + s.EndTime.Sub(s.StartTime).Round(100*time.Microsecond).String() + "\n")
				walk(s.SpanContext.SpanID().String(), depth+1)
			}
		}
	}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID().String()] = true
	}
	for _, s := range spans { // roots: spans whose parent is not in the trace
		if !ids[s.Parent.SpanID().String()] {
			b.WriteString(s.Name + " " + s.EndTime.Sub(s.StartTime).Round(100*time.Microsecond).String() + "\n")
			walk(s.SpanContext.SpanID().String(), 1)
		}
	}
	return b.String()
}
