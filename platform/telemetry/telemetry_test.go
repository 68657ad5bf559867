package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

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

// An ops listener refuses a body over its cap and drops a client that sends its
// headers and then stalls its body: nobody has authenticated there yet.
func TestOpsServerBounds(t *testing.T) {
	t.Parallel()
	read := make(chan error, 2)
	srv := OpsServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		read <- err
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	resp, err := http.Post("http://"+ln.Addr().String()+"/codec/decode", "application/json", bytes.NewReader(make([]byte, MaxOpsBody+1)))
	if err == nil {
		resp.Body.Close()
	}
	var tooLarge *http.MaxBytesError
	if err := <-read; !errors.As(err, &tooLarge) {
		t.Fatalf("a body over %d bytes was read whole: %v", MaxOpsBody, err)
	}

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	began := time.Now()
	fmt.Fprint(conn, "POST /codec/decode HTTP/1.1\r\nHost: ops\r\nContent-Length: 100\r\n\r\n")
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("a stalled body was read whole")
		}
		t.Logf("stalled body cut after %v: %v", time.Since(began).Round(time.Second), err)
	case <-time.After(opsReadTimeout + 5*time.Second):
		t.Fatalf("a client stalling its body held the connection for %v", time.Since(began))
	}
}
