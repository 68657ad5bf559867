package kafkaclient_test

import (
	"path/filepath"
	"testing"

	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit"
)

func writePEM(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	cert, key, err := testkit.SelfSignedCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func TestNewCluster(t *testing.T) {
	brokers := []string{"b1:9093", "b2:9093"}
	c, err := kafkaclient.NewCluster(brokers, kafkaclient.Security{})
	if err != nil || c.TLS != nil || c.SASL != nil {
		t.Fatalf("open cluster: %+v, %v", c, err)
	}
	cert, key := writePEM(t, t.TempDir())
	c, err = kafkaclient.NewCluster(brokers, kafkaclient.Security{CAPath: cert, CertPath: cert, KeyPath: key, ServerName: "kafka.internal",
		Mechanism: "SCRAM-SHA-512", Username: "orderflow-worker", Password: "pw"})
	if err != nil || c.TLS == nil || c.TLS.RootCAs == nil || len(c.TLS.Certificates) != 1 || c.TLS.ServerName != "kafka.internal" ||
		c.SASL == nil || c.SASL.Name() != "SCRAM-SHA-512" {
		t.Fatalf("SASL_SSL with mTLS: %+v, %v", c, err)
	}
	for _, m := range []string{"SCRAM-SHA-256", "PLAIN"} {
		if c, err := kafkaclient.NewCluster(brokers, kafkaclient.Security{TLS: true, Mechanism: m, Username: "u", Password: "p"}); err != nil || c.SASL.Name() != m {
			t.Fatalf("%s: %+v, %v", m, c, err)
		}
	}
	for name, s := range map[string]kafkaclient.Security{
		"PLAIN without TLS":       {Mechanism: "PLAIN", Username: "u", Password: "p"},
		"unknown mechanism":       {TLS: true, Mechanism: "GSSAPI", Username: "u", Password: "p"},
		"no password":             {TLS: true, Mechanism: "SCRAM-SHA-512", Username: "u"},
		"user without mechanism":  {Username: "u", Password: "p"},
		"certificate without key": {CertPath: cert},
		"missing CA":              {CAPath: filepath.Join(t.TempDir(), "none.pem")},
		"CA not PEM":              {CAPath: key + "x"},
	} {
		if _, err := kafkaclient.NewCluster(brokers, s); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := kafkaclient.NewCluster(nil, kafkaclient.Security{}); err == nil {
		t.Error("no brokers: accepted")
	}
}
