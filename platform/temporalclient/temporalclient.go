// Package temporalclient dials the Temporal frontend with the process's logger and
// the payload encryption.
package temporalclient

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/grpc/codes"

	"github.com/orderflow/orderflow/platform/patience"
	"github.com/orderflow/orderflow/platform/payloadcodec"
)

// LoadConnection reads where and how to reach Temporal the way Temporal's own tools
// do (the SDK's envconfig): TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
// TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH / _KEY_PATH / _DATA,
// TEMPORAL_TLS_SERVER_CA_CERT_PATH / _DATA, TEMPORAL_TLS_SERVER_NAME,
// TEMPORAL_PROFILE and TEMPORAL_CONFIG_FILE (a profile's file, if present). The
// result holds the connection only: address, namespace, credentials, TLS.
func LoadConnection(lookup func(string) (string, bool)) (client.Options, error) {
	opts, err := envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{EnvLookup: envLookup(lookup)})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal connection: %w", err)
	}
	if opts.HostPort == "" {
		opts.HostPort = "127.0.0.1:7233"
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	return opts, nil
}

// envLookup is envconfig's lookup on a getenv-like function; it lists no
// variables, so TEMPORAL_GRPC_META_* headers are not read.
type envLookup func(string) (string, bool)

func (l envLookup) LookupEnv(key string) (string, bool) { return l(key) }
func (envLookup) Environ() []string                     { return nil }

// Settings are what a client is dialed with.
type Settings struct {
	// Connection is the address, namespace, credentials and TLS (LoadConnection).
	Connection client.Options
	// Codec encrypts every payload the client and its workers write.
	Codec converter.PayloadCodec
	// Metrics receives the SDK's own metrics; nil for none.
	Metrics client.MetricsHandler
	// Interceptors of the client and of every worker made from it (tracing).
	Interceptors []interceptor.ClientInterceptor
	Logger       *slog.Logger
}

// Dial connects to Temporal and checks that the frontend answers.
func Dial(ctx context.Context, s Settings) (client.Client, error) {
	c, err := client.DialContext(ctx, s.Options())
	if err != nil {
		return nil, fmt.Errorf("dial temporal at %s: %w", s.Connection.HostPort, err)
	}
	return c, nil
}

// DialWithin dials as Dial does, and asks again, for up to within, while the
// frontend does not answer: a server that is starting, restarting or too busy to
// answer in the SDK's 5 s. An answer that refuses (credentials, a namespace)
// ends it at once.
func DialWithin(ctx context.Context, s Settings, within time.Duration) (client.Client, error) {
	var c client.Client
	err := patience.Do(ctx, within, s.Logger, "temporal frontend", unanswered, func() (err error) {
		c, err = Dial(ctx, s)
		return err
	})
	return c, err
}

// unanswered reports whether err is the frontend's silence (no connection, or no
// answer in time) rather than its refusal.
func unanswered(err error) bool {
	switch serviceerror.ToStatus(err).Code() {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// Options are the client options of Dial.
func (s Settings) Options() client.Options {
	dc, fc := payloadcodec.Converters(s.Codec)
	o := s.Connection
	o.Logger = tlog.NewStructuredLogger(s.Logger.With("component", "temporal"))
	o.DataConverter, o.FailureConverter = dc, fc
	o.MetricsHandler, o.Interceptors = s.Metrics, s.Interceptors
	// The SDK gzips every request by default, and the server answers in kind; but a
	// request's bulk is payloads the codec has already deflated and sealed, which
	// gzip cannot shrink. It cost a tenth of the worker's and the API's CPU.
	o.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	return o
}

// Check is a readiness check of the Temporal frontend.
func Check(c client.Client) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return fmt.Errorf("temporal: %w", err)
		}
		return nil
	}
}
