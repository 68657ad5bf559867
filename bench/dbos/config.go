package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
)

// benchDatabase is DBOS's own system database, apart from the service's tables.
const benchDatabase = "orderflow_dbos_bench"

// usageError is a bad command line: main exits 2 on it.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

type config struct {
	n, concurrency, steps, warmup int
	databaseURL                   string
}

// parseConfig reads the flags; the URL falls back to DATABASE_URL.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("dbosbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.n, "n", 500, "workflows measured")
	fs.IntVar(&cfg.concurrency, "c", 16, "concurrent callers, each starting one workflow and waiting for its result")
	fs.IntVar(&cfg.steps, "steps", 4, "no-op steps per workflow")
	fs.IntVar(&cfg.warmup, "warmup", 20, "workflows run first and not measured")
	// The default is read after parsing, so -h never prints a password from the environment.
	fs.StringVar(&cfg.databaseURL, "database-url", "",
		"PostgreSQL URL; DBOS keeps its state in database "+benchDatabase+" on that server (default $DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		// The flag package has already printed the error and the usage.
		return cfg, usageError{err}
	}
	if cfg.databaseURL == "" {
		cfg.databaseURL = getenv("DATABASE_URL")
	}
	if fs.NArg() > 0 {
		return cfg, usageError{fmt.Errorf("unexpected arguments: %q", fs.Args())}
	}
	switch {
	case cfg.n < 1:
		return cfg, usageError{fmt.Errorf("-n must be at least 1, got %d", cfg.n)}
	case cfg.concurrency < 1:
		return cfg, usageError{fmt.Errorf("-c must be at least 1, got %d", cfg.concurrency)}
	case cfg.steps < 1:
		return cfg, usageError{fmt.Errorf("-steps must be at least 1, got %d", cfg.steps)}
	case cfg.warmup < 0:
		return cfg, usageError{fmt.Errorf("-warmup must not be negative, got %d", cfg.warmup)}
	case cfg.databaseURL == "":
		return cfg, usageError{errors.New("no database: set -database-url or DATABASE_URL")}
	}
	return cfg, nil
}

// benchDatabaseURL points the given server URL at benchDatabase, keeping the
// credentials and query parameters (sslmode and the like).
func benchDatabaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole URL, password included: report only its cause.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return "", fmt.Errorf("parse database URL: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "", fmt.Errorf("database URL must be postgres:// or postgresql://, got scheme %q", u.Scheme)
	}
	u.Path, u.RawPath = "/"+benchDatabase, ""
	return u.String(), nil
}
