// Package config reads typed settings from environment variables, collecting every
// bad value so a misconfigured process reports all of them at once.
package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/platform/backlog"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/platform/temporalclient"
)

// Env reads settings from a getenv function (os.Getenv in mains, a map in tests).
type Env struct {
	getenv func(string) string
	errs   []error
	vars   []Var
	seen   map[string]bool
}

// Var is a setting a process read, as docs/configuration.md lists it.
type Var struct {
	Name string
	// Kind is what the value must be ("duration", "boolean"...): a value of
	// another kind is an error at start that names the variable.
	Kind    string
	Default string
}

// Kinds of value whose bad spellings are refused.
const (
	KindText     = "text"
	KindRequired = "text, required"
	KindInt      = "integer ≥ 1"
	KindCount    = "integer ≥ 0"
	KindDuration = "duration"
	KindBool     = "boolean"
	KindList     = "comma-separated list"
	KindLevel    = "debug, info, warn or error"
)

// New returns an Env reading from getenv.
func New(getenv func(string) string) *Env {
	return &Env{getenv: getenv, seen: map[string]bool{}}
}

// Vars are the settings read so far, in the order first read.
func (e *Env) Vars() []Var {
	return e.vars
}

// lookup reads a variable for another package's reader (Temporal's envconfig),
// noting it as text.
func (e *Env) lookup(key string) (string, bool) {
	e.note(key, KindText, "")
	v := e.getenv(key)
	return v, v != ""
}

func (e *Env) note(key, kind, def string) {
	if !e.seen[key] {
		e.seen[key] = true
		e.vars = append(e.vars, Var{Name: key, Kind: kind, Default: def})
	}
}

func (e *Env) read(key, kind, def string) string {
	e.note(key, kind, def)
	return strings.TrimSpace(e.getenv(key))
}

// String returns the variable, or def when it is unset or empty.
func (e *Env) String(key, def string) string {
	if v := e.read(key, KindText, def); v != "" {
		return v
	}
	return def
}

// Required returns the variable and records an error when it is missing.
func (e *Env) Required(key string) string {
	v := e.read(key, KindRequired, "")
	if v == "" {
		e.errs = append(e.errs, fmt.Errorf("%s is required", key))
	}
	return v
}

// Int returns the variable as a positive integer, or def.
func (e *Env) Int(key string, def int) int {
	v := e.read(key, KindInt, strconv.Itoa(def))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want a positive integer", key, v))
		return def
	}
	return n
}

// Count returns the variable as a non-negative integer, or def: 0 means none.
func (e *Env) Count(key string, def int) int {
	v := e.read(key, KindCount, strconv.Itoa(def))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want 0 or a positive integer", key, v))
		return def
	}
	return n
}

// Duration returns the variable as a non-negative Go duration ("25s", "1m"), or def.
func (e *Env) Duration(key string, def time.Duration) time.Duration {
	v := e.read(key, KindDuration, durationString(def))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want a duration such as 25s", key, v))
		return def
	}
	return d
}

// Bool returns the variable as Go parses a boolean (1, t, true, 0, f, false...),
// or def.
func (e *Env) Bool(key string, def bool) bool {
	v := e.read(key, KindBool, strconv.FormatBool(def))
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want true or false", key, v))
		return def
	}
	return b
}

// Reconcile is the reconciler's schedule and policy: RECONCILE_INTERVAL (between
// passes, and how long an order stays unsettled before its workflow is looked at)
// and RECONCILE_REFUND_ORPHANS.
func (e *Env) Reconcile() (interval time.Duration, refundOrphans bool) {
	interval = e.Duration("RECONCILE_INTERVAL", time.Minute)
	if interval < time.Second {
		e.errs = append(e.errs, fmt.Errorf("RECONCILE_INTERVAL=%s: want a second or more", interval))
	}
	return interval, e.Bool("RECONCILE_REFUND_ORPHANS", true)
}

// List returns the comma-separated variable, or def split the same way.
func (e *Env) List(key, def string) []string {
	var out []string
	v := e.read(key, KindList, def)
	if v == "" {
		v = def
	}
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Level returns LOG_LEVEL: debug, info (unset), warn or error, in any case.
func (e *Env) Level() string {
	v := strings.ToLower(e.read("LOG_LEVEL", KindLevel, "info"))
	switch v {
	case "":
		return "info"
	case "debug", "info", "warn", "error":
		return v
	}
	e.errs = append(e.errs, fmt.Errorf("LOG_LEVEL=%q: want debug, info, warn or error", v))
	return "info"
}

// durationString spells a default as a person would write it: 24h, not 24h0m0s.
func durationString(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Err reports every invalid or missing variable seen so far.
func (e *Env) Err() error {
	return errors.Join(e.errs...)
}

// Common are the settings every orderflow process reads, with their defaults.
type Common struct {
	DatabaseURL string
	DBMaxConns  int
	// Temporal is the connection to Temporal (temporalclient.LoadConnection).
	Temporal          client.Options
	TemporalNamespace string
	TaskQueue         string
	ShutdownTimeout   time.Duration
	LogLevel          string
	// PayloadKeys encrypt what goes into Temporal's history (secret: never logged).
	PayloadKeys *payloadcodec.Keyring
	// Backlog bounds the work the fleet on TaskQueue has open: the API and the
	// consumer take no more above it.
	Backlog backlog.Options
}

// Common reads the shared settings.
func (e *Env) Common() Common {
	c := Common{
		DatabaseURL:     e.Required("DATABASE_URL"),
		DBMaxConns:      e.Int("DB_MAX_CONNS", 20),
		Temporal:        e.Temporal(),
		TaskQueue:       e.String("TASK_QUEUE", "orders"),
		ShutdownTimeout: e.Duration("SHUTDOWN_TIMEOUT", 25*time.Second),
		LogLevel:        e.Level(),
		PayloadKeys:     e.keyring("PAYLOAD_KEYS"),
	}
	c.TemporalNamespace = c.Temporal.Namespace
	c.Backlog = backlog.Options{Queue: c.TaskQueue, Accept: e.Duration("BACKLOG_ACCEPT", 0), Floor: e.Int("BACKLOG_FLOOR", 100)}
	return c
}

// Invalid records err (if not nil) among the errors Err reports: a setting whose
// value its reader refused.
func (e *Env) Invalid(err error) {
	if err != nil {
		e.errs = append(e.errs, err)
	}
}

// Temporal reads the Temporal connection as Temporal's tools do (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_TLS_*, TEMPORAL_API_KEY, TEMPORAL_PROFILE...).
func (e *Env) Temporal() client.Options {
	// Noted first, so the table shows the defaults LoadConnection and envconfig
	// apply.
	e.note("TEMPORAL_CONFIG_FILE", KindText, "~/.config/temporalio/temporal.toml")
	e.note("TEMPORAL_PROFILE", KindText, "default")
	e.note("TEMPORAL_ADDRESS", KindText, "127.0.0.1:7233")
	e.note("TEMPORAL_NAMESPACE", KindText, "default")
	// envconfig ignores a boolean it cannot read: these are read here, as Go
	// reads booleans, and handed on spelled as it expects.
	bools := map[string]string{}
	for _, k := range []string{"TEMPORAL_TLS", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"} {
		if v := e.read(k, KindBool, ""); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				e.errs = append(e.errs, fmt.Errorf("%s=%q: want true or false", k, v))
				continue
			}
			bools[k] = strconv.FormatBool(b)
		}
	}
	conn, err := temporalclient.LoadConnection(func(k string) (string, bool) {
		switch k {
		case "TEMPORAL_TLS", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION":
			v, ok := bools[k]
			return v, ok
		case "TEMPORAL_CODEC_ENDPOINT", "TEMPORAL_CODEC_AUTH":
			// The CLI's remote codec: these processes encrypt with PAYLOAD_KEYS.
			return "", false
		}
		return e.lookup(k)
	})
	if err != nil {
		e.errs = append(e.errs, err)
	}
	return conn
}

// Kafka reads the brokers and the cluster's security (KAFKA_BROKERS, KAFKA_TLS,
// KAFKA_TLS_CA_PATH, KAFKA_TLS_CERT_PATH, KAFKA_TLS_KEY_PATH, KAFKA_TLS_SERVER_NAME,
// KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD).
func (e *Env) Kafka() kafkaclient.Cluster {
	brokers := e.List("KAFKA_BROKERS", "127.0.0.1:9092")
	c, err := kafkaclient.NewCluster(brokers, kafkaclient.Security{
		TLS: e.Bool("KAFKA_TLS", false), CAPath: e.String("KAFKA_TLS_CA_PATH", ""),
		CertPath: e.String("KAFKA_TLS_CERT_PATH", ""), KeyPath: e.String("KAFKA_TLS_KEY_PATH", ""),
		ServerName: e.String("KAFKA_TLS_SERVER_NAME", ""), Mechanism: e.String("KAFKA_SASL_MECHANISM", ""),
		Username: e.String("KAFKA_SASL_USERNAME", ""), Password: e.String("KAFKA_SASL_PASSWORD", ""),
	})
	if err != nil {
		e.errs = append(e.errs, err)
	}
	return c
}

// keyring reads a required payload keyring; the error never quotes the value.
func (e *Env) keyring(key string) *payloadcodec.Keyring {
	spec := e.Required(key)
	if spec == "" {
		return nil
	}
	ring, err := payloadcodec.ParseKeyring(spec)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s: %w", key, err))
	}
	return ring
}
