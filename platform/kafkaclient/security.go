package kafkaclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// Cluster is how every client of a process reaches Kafka: the bootstrap brokers
// and, for a secured cluster, TLS and a SASL mechanism (both nil on an open one).
type Cluster struct {
	Brokers []string
	TLS     *tls.Config
	SASL    sasl.Mechanism
}

// Security is what a process is told about the cluster's security (KAFKA_TLS_*,
// KAFKA_SASL_*).
type Security struct {
	TLS        bool   // KAFKA_TLS: encrypt; implied by any other TLS setting
	CAPath     string // KAFKA_TLS_CA_PATH: the brokers' CA (system roots when empty)
	CertPath   string // KAFKA_TLS_CERT_PATH: a client certificate, for mTLS
	KeyPath    string // KAFKA_TLS_KEY_PATH: its key
	ServerName string // KAFKA_TLS_SERVER_NAME: the name the brokers' certificates carry
	// Mechanism is KAFKA_SASL_MECHANISM: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512;
	// empty for none.
	Mechanism string
	Username  string // KAFKA_SASL_USERNAME
	Password  string // KAFKA_SASL_PASSWORD (secret)
}

// NewCluster returns the cluster of brokers with the security s describes.
func NewCluster(brokers []string, s Security) (Cluster, error) {
	c := Cluster{Brokers: brokers}
	if len(brokers) == 0 {
		return c, errors.New("KAFKA_BROKERS: no broker")
	}
	if s.TLS || s.CAPath != "" || s.CertPath != "" || s.KeyPath != "" || s.ServerName != "" {
		cfg, err := s.tlsConfig()
		if err != nil {
			return c, err
		}
		c.TLS = cfg
	}
	switch strings.ToUpper(s.Mechanism) {
	case "":
		if s.Username != "" || s.Password != "" {
			return c, errors.New("KAFKA_SASL_USERNAME set without KAFKA_SASL_MECHANISM")
		}
	case "PLAIN":
		if c.TLS == nil {
			return c, errors.New("KAFKA_SASL_MECHANISM=PLAIN sends the password in the clear: set KAFKA_TLS")
		}
		c.SASL = plain.Mechanism{Username: s.Username, Password: s.Password}
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		algo := scram.SHA512
		if strings.EqualFold(s.Mechanism, "SCRAM-SHA-256") {
			algo = scram.SHA256
		}
		m, err := scram.Mechanism(algo, s.Username, s.Password)
		if err != nil {
			return c, fmt.Errorf("KAFKA_SASL_MECHANISM %s: %w", s.Mechanism, err)
		}
		c.SASL = m
	default:
		return c, fmt.Errorf("KAFKA_SASL_MECHANISM=%q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism)
	}
	if c.SASL != nil && (s.Username == "" || s.Password == "") {
		return c, errors.New("KAFKA_SASL_MECHANISM needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD")
	}
	return c, nil
}

func (s Security) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.ServerName}
	if s.CAPath != "" {
		pem, err := os.ReadFile(s.CAPath)
		if err != nil {
			return nil, fmt.Errorf("KAFKA_TLS_CA_PATH: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("KAFKA_TLS_CA_PATH %s: no PEM certificate", s.CAPath)
		}
	}
	if (s.CertPath == "") != (s.KeyPath == "") {
		return nil, errors.New("KAFKA_TLS_CERT_PATH and KAFKA_TLS_KEY_PATH go together")
	}
	if s.CertPath != "" {
		cert, err := tls.LoadX509KeyPair(s.CertPath, s.KeyPath)
		if err != nil {
			return nil, fmt.Errorf("KAFKA_TLS_CERT_PATH: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
