package tracing

import (
	"context"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// customersPath begins the routes whose next segment is a customer's ID
// (DELETE /v1/customers/{id}; a payment provider's customers too): a span
// records the route's pattern there, never the ID.
const customersPath = "/v1/customers/"

// scrubbed wraps the tracer provider of the HTTP server and client spans, which
// record a request's URL: every span it starts records the URL without its
// query (GET /v1/orders?customer_id= names a customer) and with a customer's
// ID replaced by {id}, in its attributes and its name.
type scrubbed struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (s scrubbed) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return scrubbedTracer{t: s.tp.Tracer(name, opts...)}
}

type scrubbedTracer struct {
	embedded.Tracer
	t trace.Tracer
}

// Start starts the span with its options as given, but its attributes and name
// scrubbed.
func (s scrubbedTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	clean := []trace.SpanStartOption{trace.WithAttributes(scrubAttributes(cfg.Attributes())...),
		trace.WithSpanKind(cfg.SpanKind()), trace.WithLinks(cfg.Links()...)}
	if cfg.NewRoot() {
		clean = append(clean, trace.WithNewRoot())
	}
	if !cfg.Timestamp().IsZero() {
		clean = append(clean, trace.WithTimestamp(cfg.Timestamp()))
	}
	ctx, span := s.t.Start(ctx, scrubName(name), clean...) //nolint:spancheck // the caller (otelhttp) ends it: this only wraps its tracer
	return ctx, scrubbedSpan{Span: span}                   //nolint:spancheck // as above
}

// scrubbedSpan scrubs what otelhttp sets on its span once the request is
// served (its name, from the route; its response's attributes).
type scrubbedSpan struct{ trace.Span }

func (s scrubbedSpan) SetName(name string) { s.Span.SetName(scrubName(name)) }

func (s scrubbedSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.Span.SetAttributes(scrubAttributes(kv)...)
}

// scrubAttributes drops a URL's query and replaces a customer's ID in its path,
// in the current semantic conventions' attributes and the older ones'.
func scrubAttributes(kv []attribute.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(kv))
	for _, a := range kv {
		switch a.Key {
		case "url.query":
			continue
		case "url.path":
			a.Value = attribute.StringValue(scrubPath(a.Value.AsString()))
		case "http.target":
			path, _, _ := strings.Cut(a.Value.AsString(), "?")
			a.Value = attribute.StringValue(scrubPath(path))
		case "url.full", "http.url":
			a.Value = attribute.StringValue(scrubURL(a.Value.AsString()))
		}
		out = append(out, a)
	}
	return out
}

// scrubURL is a URL without its query, fragment and user, its path scrubbed.
func scrubURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "" // a URL that does not parse cannot be scrubbed: none is recorded
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment, u.User = "", false, "", "", nil
	u.Path, u.RawPath = scrubPath(u.Path), ""
	return u.String()
}

// scrubPath replaces the customer's ID of a path under customersPath with {id}.
func scrubPath(path string) string {
	i := strings.Index(path, customersPath)
	if i < 0 {
		return path
	}
	rest := path[i+len(customersPath):]
	id, tail, more := strings.Cut(rest, "/")
	if id == "" || id == "{id}" {
		return path
	}
	out := path[:i] + customersPath + "{id}"
	if more {
		out += "/" + tail
	}
	return out
}

// scrubName scrubs each path in a span's name ("DELETE /v1/customers/{id}").
func scrubName(name string) string {
	words := strings.Fields(name)
	for i, w := range words {
		if strings.Contains(w, "/") || strings.Contains(w, "?") {
			w, _, _ = strings.Cut(w, "?")
			words[i] = scrubPath(w)
		}
	}
	return strings.Join(words, " ")
}
