package temporalclient

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// writeCert writes a self-signed certificate and its key, as PEM files.
func writeCert(t *testing.T, dir string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "orderflow-worker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certPath, keyPath = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// The settings Temporal's own tools read, read the same way.
func TestLoadConnection(t *testing.T) {
	none := map[string]string{"TEMPORAL_CONFIG_FILE": filepath.Join(t.TempDir(), "absent.toml")}
	c, err := LoadConnection(lookup(none))
	if err != nil || c.HostPort != "127.0.0.1:7233" || c.Namespace != "default" || c.Credentials != nil || c.ConnectionOptions.TLS != nil {
		t.Fatalf("defaults: %+v, %v", c, err)
	}

	cloud := map[string]string{"TEMPORAL_CONFIG_FILE": none["TEMPORAL_CONFIG_FILE"], "TEMPORAL_ADDRESS": "orderflow.a1b2c.tmprl.cloud:7233",
		"TEMPORAL_NAMESPACE": "orderflow.a1b2c", "TEMPORAL_API_KEY": "secret-api-key"}
	c, err = LoadConnection(lookup(cloud))
	if err != nil || c.HostPort != cloud["TEMPORAL_ADDRESS"] || c.Namespace != "orderflow.a1b2c" || c.Credentials == nil || c.ConnectionOptions.TLS == nil {
		t.Fatalf("API key: %+v, %v; want credentials and TLS", c, err)
	}

	cert, key := writeCert(t, t.TempDir())
	mtls := map[string]string{"TEMPORAL_CONFIG_FILE": none["TEMPORAL_CONFIG_FILE"], "TEMPORAL_ADDRESS": "temporal.internal:7233",
		"TEMPORAL_TLS_CLIENT_CERT_PATH": cert, "TEMPORAL_TLS_CLIENT_KEY_PATH": key,
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH": cert, "TEMPORAL_TLS_SERVER_NAME": "temporal-frontend"}
	c, err = LoadConnection(lookup(mtls))
	if err != nil || c.ConnectionOptions.TLS == nil || c.ConnectionOptions.TLS.ServerName != "temporal-frontend" ||
		len(c.ConnectionOptions.TLS.Certificates) != 1 || c.ConnectionOptions.TLS.RootCAs == nil {
		t.Fatalf("mTLS: %+v, %v", c.ConnectionOptions.TLS, err)
	}

	mtls["TEMPORAL_TLS_CLIENT_KEY_PATH"] = filepath.Join(t.TempDir(), "missing.key")
	if _, err := LoadConnection(lookup(mtls)); err == nil {
		t.Fatal("a missing client key was accepted")
	}
}
