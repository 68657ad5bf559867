package main

import (
	"errors"
	"flag"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPercentileMs(t *testing.T) {
	// 1..100 ms shuffled: index ⌊p·100⌋ of the sorted samples is p·100+1 ms.
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration((i*37)%100+1) * time.Millisecond
	}
	for _, tc := range []struct {
		p    float64
		want float64
	}{{0.50, 51}, {0.95, 96}, {0.99, 100}, {1, 100}, {0, 1}} {
		if got := percentileMs(lat, tc.p); got != tc.want {
			t.Errorf("percentileMs(p=%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if lat[0] != time.Millisecond || lat[1] != 38*time.Millisecond {
		t.Errorf("percentileMs sorted its input in place: %v", lat[:2])
	}
	if got := percentileMs([]time.Duration{1500 * time.Microsecond}, 0.99); got != 1.5 {
		t.Errorf("one sample: got %v, want 1.5", got)
	}
	if got := percentileMs(nil, 0.5); got != 0 {
		t.Errorf("no samples: got %v, want 0", got)
	}
}

func TestSummarize(t *testing.T) {
	lat := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond}
	r := summarize(config{n: 4, concurrency: 2, steps: 1}, 2*time.Second, lat)
	if r.Engine != "DBOS Transact Go v1.9.0" || r.N != 4 || r.Concurrency != 2 || r.Steps != 1 {
		t.Errorf("identity fields wrong: %+v", r)
	}
	if r.Seconds != 2 || math.Abs(r.Rate-2) > 1e-9 {
		t.Errorf("seconds %v rate %v, want 2 and 2", r.Seconds, r.Rate)
	}
	if r.P50ms != 30 || r.P95ms != 40 || r.P99ms != 40 {
		t.Errorf("percentiles %v %v %v, want 30 40 40", r.P50ms, r.P95ms, r.P99ms)
	}
}

func TestBenchDatabaseURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://orderflow@127.0.0.1:55432/orderflow?sslmode=disable",
			"postgres://orderflow@127.0.0.1:55432/orderflow_dbos_bench?sslmode=disable"},
		{"postgresql://u:p%40ss@db.example:5432/app?sslmode=require&application_name=x",
			"postgresql://u:p%40ss@db.example:5432/orderflow_dbos_bench?sslmode=require&application_name=x"},
		{"postgres://u@host", "postgres://u@host/orderflow_dbos_bench"},
		{"postgres://u@host/a%2Fb", "postgres://u@host/orderflow_dbos_bench"},
	} {
		got, err := benchDatabaseURL(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("benchDatabaseURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"host=127.0.0.1 dbname=orderflow", "mysql://u@h/db", "postgres://u:secret@h:bad/db"} {
		_, err := benchDatabaseURL(bad)
		if err == nil {
			t.Errorf("benchDatabaseURL(%q): no error", bad)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("benchDatabaseURL(%q): error shows the password: %v", bad, err)
		}
	}
}

func TestParseConfig(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "DATABASE_URL" {
				return v
			}
			return ""
		}
	}
	cfg, err := parseConfig(nil, env("postgres://e/x"), io.Discard)
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if want := (config{n: 500, concurrency: 16, steps: 4, warmup: 20, databaseURL: "postgres://e/x"}); cfg != want {
		t.Errorf("defaults: got %+v, want %+v", cfg, want)
	}
	cfg, err = parseConfig([]string{"-n", "7", "-c", "3", "-steps", "1", "-warmup", "0", "-database-url", "postgres://f/y"}, env("postgres://e/x"), io.Discard)
	if err != nil {
		t.Fatalf("flags: %v", err)
	}
	if want := (config{n: 7, concurrency: 3, steps: 1, warmup: 0, databaseURL: "postgres://f/y"}); cfg != want {
		t.Errorf("flags: got %+v, want %+v", cfg, want)
	}

	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"-n", "0"}, "postgres://e/x", "-n must be at least 1"},
		{[]string{"-c", "0"}, "postgres://e/x", "-c must be at least 1"},
		{[]string{"-steps", "0"}, "postgres://e/x", "-steps must be at least 1"},
		{[]string{"-warmup", "-1"}, "postgres://e/x", "-warmup must not be negative"},
		{nil, "", "no database"},
		{[]string{"-n", "x"}, "postgres://e/x", "invalid value"},
		{[]string{"extra"}, "postgres://e/x", "unexpected arguments"},
	} {
		_, err := parseConfig(tc.args, env(tc.env), io.Discard)
		var usage usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseConfig(%q): got %v, want a usage error containing %q", tc.args, err, tc.want)
		}
	}
	if _, err := parseConfig([]string{"-h"}, env("postgres://e/x"), io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: got %v, want flag.ErrHelp", err)
	}
}
