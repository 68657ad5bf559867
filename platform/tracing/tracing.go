// Package tracing carries one trace per order across the API, Kafka, Temporal, the
// worker, the payment provider and Postgres: W3C trace context everywhere, spans
// exported as the standard OTEL_* variables say (OTLP over gRPC or HTTP), and not
// exported (but still propagated) when they name no exporter.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// Name is the instrumentation scope of orderflow's own spans.
const Name = "github.com/orderflow/orderflow"

// Tracing is a process's tracer provider and the W3C propagator.
type Tracing struct {
	Provider   trace.TracerProvider
	Propagator propagation.TextMapPropagator
	shutdown   func(context.Context) error
}

// FromEnv exports spans with OpenTelemetry's autoexport, which reads the standard
// variables itself: OTEL_TRACES_EXPORTER (otlp, console, none),
// OTEL_EXPORTER_OTLP_PROTOCOL (grpc, http/protobuf), endpoints, headers, TLS,
// timeout. Spans are not recorded, only the incoming trace context passed on, when
// OTEL_SDK_DISABLED is true, OTEL_TRACES_EXPORTER is none, or no exporter and no
// endpoint is named at all. The service is OTEL_SERVICE_NAME when set, else
// service.
func FromEnv(ctx context.Context, service string, getenv func(string) string) (*Tracing, error) {
	exporter := getenv("OTEL_TRACES_EXPORTER")
	switch {
	case getenv("OTEL_SDK_DISABLED") == "true", exporter == "none",
		exporter == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "":
		return With(noop.NewTracerProvider()), nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("trace exporter: %w", err)
	}
	res, err := serviceResource(ctx, service)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := With(tp)
	t.shutdown = tp.Shutdown
	return t, nil
}

// serviceResource names the process: service, unless OTEL_SERVICE_NAME (or
// service.name in OTEL_RESOURCE_ATTRIBUTES) says otherwise.
func serviceResource(ctx context.Context, service string) (*resource.Resource, error) {
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(semconv.ServiceName(service)), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return res, nil
}

// With uses tp (tests pass one with an in-memory exporter).
func With(tp trace.TracerProvider) *Tracing {
	return &Tracing{
		Provider:   tp,
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		shutdown:   func(context.Context) error { return nil },
	}
}

// Shutdown flushes the spans not yet exported.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.shutdown(ctx) }

// Flush is Shutdown within 5 s, for a main's defer; a failure is only logged.
func (t *Tracing) Flush(logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.shutdown(ctx); err != nil {
		logger.Warn("flush traces", "err", err)
	}
}

// Tracer is orderflow's tracer.
func (t *Tracing) Tracer() trace.Tracer { return t.Provider.Tracer(Name) }

// Handler traces an HTTP server: a server span per request, joined to the caller's
// trace when it sends traceparent. The span records the request's path without
// its query, and a customer's ID in it as {id} (scrubbed).
func (t *Tracing) Handler(h http.Handler, operation string) http.Handler {
	return otelhttp.NewHandler(h, operation, otelhttp.WithTracerProvider(scrubbed{tp: t.Provider}), otelhttp.WithPropagators(t.Propagator))
}

// Transport traces an HTTP client and sends traceparent; its spans' URLs are
// scrubbed as the server's are.
func (t *Tracing) Transport(base http.RoundTripper) http.RoundTripper {
	return otelhttp.NewTransport(base, otelhttp.WithTracerProvider(scrubbed{tp: t.Provider}), otelhttp.WithPropagators(t.Propagator))
}

// Temporal is the SDK's tracing interceptor: workflow starts, runs, activities,
// updates and signals become spans, carried in Temporal's headers.
func (t *Tracing) Temporal() (interceptor.Interceptor, error) {
	return temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:            t.Provider.Tracer("temporal-sdk-go"),
		TextMapPropagator: t.Propagator,
	})
}

// Pgx traces Postgres queries (statements, never their parameters).
func (t *Tracing) Pgx() pgx.QueryTracer {
	return otelpgx.NewTracer(otelpgx.WithTracerProvider(t.Provider), otelpgx.WithDisableConnectionDetailsInAttributes())
}

// Inject writes ctx's trace context into Kafka headers.
func (t *Tracing) Inject(ctx context.Context, headers []kafka.Header) []kafka.Header {
	c := headerCarrier{h: &headers}
	t.Propagator.Inject(ctx, c)
	return headers
}

// Extract reads the trace context of Kafka headers into ctx.
func (t *Tracing) Extract(ctx context.Context, headers []kafka.Header) context.Context {
	return t.Propagator.Extract(ctx, headerCarrier{h: &headers})
}

// headerCarrier is propagation.TextMapCarrier on Kafka headers.
type headerCarrier struct{ h *[]kafka.Header }

func (c headerCarrier) Get(key string) string {
	for _, h := range *c.h {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func (c headerCarrier) Set(key, value string) {
	for i, h := range *c.h {
		if h.Key == key {
			(*c.h)[i].Value = []byte(value)
			return
		}
	}
	*c.h = append(*c.h, kafka.Header{Key: key, Value: []byte(value)})
}

func (c headerCarrier) Keys() []string {
	keys := make([]string, len(*c.h))
	for i, h := range *c.h {
		keys[i] = h.Key
	}
	return keys
}
