package kafkaclient

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

func writePEM(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "orderflow"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	cert, key = filepath.Join(dir, "c.pem"), filepath.Join(dir, "c.key")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return cert, key
}

func TestNewCluster(t *testing.T) {
	brokers := []string{"b1:9093", "b2:9093"}
	c, err := NewCluster(brokers, Security{})
	if err != nil || c.TLS != nil || c.SASL != nil {
		t.Fatalf("open cluster: %+v, %v", c, err)
	}
	cert, key := writePEM(t, t.TempDir())
	c, err = NewCluster(brokers, Security{CAPath: cert, CertPath: cert, KeyPath: key, ServerName: "kafka.internal",
		Mechanism: "SCRAM-SHA-512", Username: "orderflow-worker", Password: "pw"})
	if err != nil || c.TLS == nil || c.TLS.RootCAs == nil || len(c.TLS.Certificates) != 1 || c.TLS.ServerName != "kafka.internal" ||
		c.SASL == nil || c.SASL.Name() != "SCRAM-SHA-512" {
		t.Fatalf("SASL_SSL with mTLS: %+v, %v", c, err)
	}
	for _, m := range []string{"SCRAM-SHA-256", "PLAIN"} {
		if c, err := NewCluster(brokers, Security{TLS: true, Mechanism: m, Username: "u", Password: "p"}); err != nil || c.SASL.Name() != m {
			t.Fatalf("%s: %+v, %v", m, c, err)
		}
	}
	for name, s := range map[string]Security{
		"PLAIN without TLS":       {Mechanism: "PLAIN", Username: "u", Password: "p"},
		"unknown mechanism":       {TLS: true, Mechanism: "GSSAPI", Username: "u", Password: "p"},
		"no password":             {TLS: true, Mechanism: "SCRAM-SHA-512", Username: "u"},
		"user without mechanism":  {Username: "u", Password: "p"},
		"certificate without key": {CertPath: cert},
		"missing CA":              {CAPath: filepath.Join(t.TempDir(), "none.pem")},
		"CA not PEM":              {CAPath: key + "x"},
	} {
		if _, err := NewCluster(brokers, s); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := NewCluster(nil, Security{}); err == nil {
		t.Error("no brokers: accepted")
	}
}
