package temporalclient_test

import (
	"log/slog"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/platform/temporalclient"
	"github.com/orderflow/orderflow/testkit"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// writeCert writes a self-signed certificate and its key, as PEM files.
func writeCert(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	cert, key, err := testkit.SelfSignedCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// The settings Temporal's own tools read, read the same way.
func TestLoadConnection(t *testing.T) {
	none := map[string]string{"TEMPORAL_CONFIG_FILE": filepath.Join(t.TempDir(), "absent.toml")}
	c, err := temporalclient.LoadConnection(lookup(none))
	if err != nil || c.HostPort != "127.0.0.1:7233" || c.Namespace != "default" || c.Credentials != nil || c.ConnectionOptions.TLS != nil {
		t.Fatalf("defaults: %+v, %v", c, err)
	}

	cloud := map[string]string{"TEMPORAL_CONFIG_FILE": none["TEMPORAL_CONFIG_FILE"], "TEMPORAL_ADDRESS": "orderflow.a1b2c.tmprl.cloud:7233",
		"TEMPORAL_NAMESPACE": "orderflow.a1b2c", "TEMPORAL_API_KEY": "secret-api-key"}
	c, err = temporalclient.LoadConnection(lookup(cloud))
	if err != nil || c.HostPort != cloud["TEMPORAL_ADDRESS"] || c.Namespace != "orderflow.a1b2c" || c.Credentials == nil || c.ConnectionOptions.TLS == nil {
		t.Fatalf("API key: %+v, %v; want credentials and TLS", c, err)
	}

	cert, key := writeCert(t, t.TempDir())
	mtls := map[string]string{"TEMPORAL_CONFIG_FILE": none["TEMPORAL_CONFIG_FILE"], "TEMPORAL_ADDRESS": "temporal.internal:7233",
		"TEMPORAL_TLS_CLIENT_CERT_PATH": cert, "TEMPORAL_TLS_CLIENT_KEY_PATH": key,
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH": cert, "TEMPORAL_TLS_SERVER_NAME": "temporal-frontend"}
	c, err = temporalclient.LoadConnection(lookup(mtls))
	if err != nil || c.ConnectionOptions.TLS == nil || c.ConnectionOptions.TLS.ServerName != "temporal-frontend" ||
		len(c.ConnectionOptions.TLS.Certificates) != 1 || c.ConnectionOptions.TLS.RootCAs == nil {
		t.Fatalf("mTLS: %+v, %v", c.ConnectionOptions.TLS, err)
	}

	mtls["TEMPORAL_TLS_CLIENT_KEY_PATH"] = filepath.Join(t.TempDir(), "missing.key")
	if _, err := temporalclient.LoadConnection(lookup(mtls)); err == nil {
		t.Fatal("a missing client key was accepted")
	}
}

// Requests go uncompressed: their payloads are sealed already, and TLS and the
// connection settings are kept.
func TestOptionsSendRequestsUncompressed(t *testing.T) {
	conn, err := temporalclient.LoadConnection(lookup(map[string]string{"TEMPORAL_ADDRESS": "temporal.internal:7233"}))
	if err != nil {
		t.Fatal(err)
	}
	o := temporalclient.Settings{Connection: conn, Logger: slog.New(slog.DiscardHandler)}.Options()
	if _, ok := o.ConnectionOptions.GrpcCompression.(*client.GrpcCompressionNone); !ok || o.HostPort != "temporal.internal:7233" {
		t.Fatalf("compression %T, address %q; want none, temporal.internal:7233", o.ConnectionOptions.GrpcCompression, o.HostPort)
	}
}
