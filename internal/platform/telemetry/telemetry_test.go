package telemetry

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestLogLinesInATraceCarryItsID(t *testing.T) {
	var buf bytes.Buffer
	logger := NewLogger(&buf, "info").With("component", "x")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	logger.InfoContext(ctx, "in a trace")
	logger.Info("outside")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.Contains(lines[0], `"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"`) || !strings.Contains(lines[0], `"span_id":"00f067aa0ba902b7"`) {
		t.Fatalf("line in a trace: %s", lines[0])
	}
	if strings.Contains(lines[1], "trace_id") {
		t.Fatalf("line outside a trace: %s", lines[1])
	}
}
