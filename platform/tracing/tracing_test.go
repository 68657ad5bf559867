package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"
)

func TestServiceNameFromTheEnvironment(t *testing.T) {
	ctx := context.Background()
	res, err := serviceResource(ctx, "orderflow-worker")
	if err != nil {
		t.Fatal(err)
	}
	if name, _ := res.Set().Value("service.name"); name.AsString() != "orderflow-worker" {
		t.Fatalf("service.name = %q, want the default", name.AsString())
	}
	t.Setenv("OTEL_SERVICE_NAME", "payments-worker-eu")
	res, err = serviceResource(ctx, "orderflow-worker")
	if err != nil {
		t.Fatal(err)
	}
	if name, _ := res.Set().Value("service.name"); name.AsString() != "payments-worker-eu" {
		t.Fatalf("service.name = %q, want OTEL_SERVICE_NAME's", name.AsString())
	}
}

func TestExporterChosenByTheEnvironment(t *testing.T) {
	ctx := context.Background()
	for name, env := range map[string]map[string]string{
		"nothing named": {},
		"disabled":      {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
		"none":          {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
	} {
		tr, err := FromEnv(ctx, "svc", func(k string) string { return env[k] })
		if _, off := tr.Provider.(noop.TracerProvider); err != nil || !off {
			t.Errorf("%s: %T, %v; want spans off", name, tr.Provider, err)
		}
	}
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
		env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}
		tr, err := FromEnv(ctx, "svc", func(k string) string { return env[k] })
		if _, off := tr.Provider.(noop.TracerProvider); err != nil || off {
			t.Fatalf("%s: %v, spans off %v", protocol, err, off)
		}
		_ = tr.Shutdown(ctx)
	}
}
