package observability_test

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// alertCases are series, one sample a minute for an hour in promtool's notation,
// that must make each alert fire, and series that must not.
var alertCases = map[string]struct{ fires, quiet []string }{
	"OrderflowPaymentUnknownTooLong": {
		fires: []string{`orderflow_orders_payment_open_oldest_seconds{status="PAYMENT_UNKNOWN"} 0+60x60`},
		quiet: []string{`orderflow_orders_payment_open_oldest_seconds{status="PAYMENT_UNKNOWN"} 0x60`},
	},
	"OrderflowPaymentPendingTooLong": {
		fires: []string{`orderflow_orders_payment_open_oldest_seconds{status="PAYMENT_PENDING"} 0+60x60`},
		quiet: []string{`orderflow_orders_payment_open_oldest_seconds{status="PAYMENT_UNKNOWN"} 0+60x60`},
	},
	"OrderflowProviderCredentialsRefused": {
		fires: []string{`orderflow_payment_provider_unauthorized_total 0+1x60`},
		quiet: []string{`orderflow_payment_provider_unauthorized_total 3x60`},
	},
	"OrderflowDeadLetters": {
		fires: []string{`orderflow_consumer_dead_lettered_total 0+1x60`},
		quiet: []string{`orderflow_consumer_dead_lettered_total 7x60`},
	},
	"OrderflowConsumerLag": {
		fires: []string{`orderflow_consumer_lag_messages{partition="0"} 800x60`, `orderflow_consumer_lag_messages{partition="1"} 800x60`},
		quiet: []string{`orderflow_consumer_lag_messages{partition="0"} 800x60`},
	},
	"OrderflowNotReady": {
		fires: []string{`orderflow_ready{instance="a",job="orderflow"} 0x60`},
		quiet: []string{`orderflow_ready{instance="a",job="orderflow"} 1x60`},
	},
	"OrderflowConsumerStuck": {
		fires: []string{`orderflow_ready_check{instance="a",check="consumer"} 0x60`},
		quiet: []string{`orderflow_ready_check{instance="a",check="temporal"} 0x60`},
	},
	"OrderflowWorkflowTasksWaiting": {
		fires: latency("temporal_workflow_task_schedule_to_start_latency_seconds", 5),
		quiet: latency("temporal_workflow_task_schedule_to_start_latency_seconds", 0.01),
	},
	"OrderflowActivitiesWaiting": {
		fires: latency("temporal_activity_schedule_to_start_latency_seconds", 5),
		quiet: latency("temporal_activity_schedule_to_start_latency_seconds", 0.01),
	},
	"OrderflowWorkflowTaskFailures": {
		fires: []string{`temporal_workflow_task_execution_failed_total{workflow_type="Order"} 0+2x60`},
		quiet: []string{`temporal_workflow_task_execution_failed_total{workflow_type="Order"} 4x60`},
	},
	"OrderflowAPIErrors": {
		fires: []string{`orderflow_http_requests_total{status="202"} 0+100x60`, `orderflow_http_requests_total{status="503"} 0+10x60`},
		quiet: []string{`orderflow_http_requests_total{status="202"} 0+100x60`, `orderflow_http_requests_total{status="422"} 0+50x60`, `orderflow_http_requests_total{status="500"} 0+1x60`},
	},
	"OrderflowProviderErrors": {
		fires: []string{`orderflow_provider_requests_total{outcome="ok"} 0+50x60`, `orderflow_provider_requests_total{outcome="server_error"} 0+10x60`},
		quiet: []string{`orderflow_provider_requests_total{outcome="ok"} 0+50x60`, `orderflow_provider_requests_total{outcome="declined"} 0+50x60`},
	},
	"OrderflowConsumerOffsetOutOfRange": {
		fires: []string{`orderflow_consumer_offset_out_of_range_total{partition="0",position="beyond_end"} 0x50 1x10`},
		quiet: []string{`orderflow_consumer_offset_out_of_range_total{partition="0",position="beyond_end"} 1x60`},
	},
	"OrderflowPruningBehind": {
		fires: []string{`orderflow_retention_overdue_seconds{table="processed_events",instance="w1"} 7200x60`, `orderflow_retention_overdue_seconds{table="processed_events",instance="w2"} 0x60`},
		quiet: []string{`orderflow_retention_overdue_seconds{table="processed_events",instance="w1"} 7200x20 0x40`, `orderflow_retention_overdue_seconds{table="idempotency_keys",instance="w1"} 60x60`},
	},
	"OrderflowReconcileDiscrepancies": {
		fires: []string{`orderflow_reconcile_discrepancies_total{kind="charge_without_order",action="refunded"} 0 0 0 1 1 1`},
		quiet: []string{`orderflow_reconcile_discrepancies_total{kind="charge_without_order",action="refunded"} 0x60`},
	},
	"OrderflowReconcileStalled": {
		// Passes complete on w1 until minute 20, then nowhere; w2 started at 0 and
		// ran none.
		fires: []string{`orderflow_reconcile_last_pass_timestamp_seconds{instance="w1"} 0+60x20 1200x40`,
			`orderflow_reconcile_last_pass_timestamp_seconds{instance="w2"} 0x60`},
		// From minute 21 they complete on w2 instead.
		quiet: []string{`orderflow_reconcile_last_pass_timestamp_seconds{instance="w1"} 0+60x20 1200x40`,
			`orderflow_reconcile_last_pass_timestamp_seconds{instance="w2"} 0x20 1260+60x39`},
	},
	"OrderflowProviderSlow": {
		fires: latency("orderflow_provider_request_duration_seconds", 30),
		quiet: latency("orderflow_provider_request_duration_seconds", 0.3),
	},
}

// latency is a histogram whose every observation takes about seconds.
func latency(name string, seconds float64) []string {
	var out []string
	for _, le := range []float64{0.025, 0.1, 0.5, 1, 2.5, 5, 10, 20, 40, 80} {
		series := name + `_bucket{le="` + model.SampleValue(le).String() + `"} `
		if le >= seconds {
			series += "0+10x60"
		} else {
			series += "0x60"
		}
		out = append(out, series)
	}
	return append(out, name+`_bucket{le="+Inf"} 0+10x60`)
}

// Every alert fires on its firing series and stays quiet on the others, as
// Prometheus's engine evaluates it each minute: firing once its expression has
// held for the rule's for: duration.
func TestEachAlertFiresOnItsSeries(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	rules, errs := rulefmt.ParseFile("alerts.yml", false, model.UTF8Validation, p, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("alerts.yml: %v", errs)
	}
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	seen := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			seen[r.Alert] = true
			c, ok := alertCases[r.Alert]
			if !ok {
				t.Errorf("%s: no case shows it firing", r.Alert)
				continue
			}
			for _, row := range []struct {
				series []string
				want   bool
			}{{c.fires, true}, {c.quiet, false}} {
				// A quiet case of none of the alert's metrics proves nothing.
				if !selectsSome(t, p, r.Alert, r.Expr, row.series) {
					t.Errorf("%s: %v holds none of the metrics it selects", r.Alert, row.series)
				}
				if got := fires(t, engine, p, r.Expr, time.Duration(r.For), row.series); got != row.want {
					t.Errorf("%s on %v: firing %v, want %v", r.Alert, row.series, got, row.want)
				}
			}
		}
	}
	for name := range alertCases {
		if !seen[name] {
			t.Errorf("a case for %s, which alerts.yml does not have", name)
		}
	}
}

// selectsSome: one of the series is of a metric expr selects.
func selectsSome(t *testing.T, p parser.Parser, alert, expr string, series []string) bool {
	t.Helper()
	names := metricNames(t, alert, expr)
	for _, d := range series {
		lbls, _, err := p.ParseSeriesDesc(d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if slices.Contains(names, lbls.Get(model.MetricNameLabel)) {
			return true
		}
	}
	return false
}

// fires evaluates expr each minute of the hour the series cover and reports
// whether, at the end, it has held for at least forDuration.
func fires(t *testing.T, engine *promql.Engine, p parser.Parser, expr string, forDuration time.Duration, series []string) bool {
	t.Helper()
	q := load(t, p, series)
	held := time.Duration(-1)
	start := time.Unix(0, 0).UTC()
	for at := 10 * time.Minute; at <= 60*time.Minute; at += time.Minute {
		query, err := engine.NewInstantQuery(context.Background(), q, nil, expr, start.Add(at))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		res := query.Exec(context.Background())
		if res.Err != nil {
			t.Fatalf("%s: %v", expr, res.Err)
		}
		vec, _ := res.Vector()
		switch {
		case len(vec) == 0:
			held = -1
		case held < 0:
			held = 0
		default:
			held += time.Minute
		}
		query.Close()
	}
	return held >= forDuration
}

// load makes a storage of the series, in promtool's notation ("name{l="v"} 0+1x60").
func load(t *testing.T, p parser.Parser, descs []string) storage.Queryable {
	t.Helper()
	var all []storage.Series
	for _, d := range descs {
		lbls, values, err := p.ParseSeriesDesc(d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		var samples []chunks.Sample
		for i, v := range values {
			if !v.Omitted {
				samples = append(samples, sample{t: int64(i) * time.Minute.Milliseconds(), f: v.Value})
			}
		}
		all = append(all, storage.NewListSeries(lbls, samples))
	}
	sort.Slice(all, func(i, j int) bool { return labels.Compare(all[i].Labels(), all[j].Labels()) < 0 })
	return &storage.MockQueryable{MockQuerier: &storage.MockQuerier{
		SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
			var out []storage.Series
			for _, s := range all {
				match := true
				for _, m := range ms {
					match = match && m.Matches(s.Labels().Get(m.Name))
				}
				if match {
					out = append(out, s)
				}
			}
			return &seriesSet{series: out, i: -1}
		},
	}}
}

type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// sample is one float sample.
type sample struct {
	t int64
	f float64
}

func (s sample) T() int64                      { return s.t }
func (s sample) ST() int64                     { return 0 }
func (s sample) F() float64                    { return s.f }
func (s sample) H() *histogram.Histogram       { return nil }
func (s sample) FH() *histogram.FloatHistogram { return nil }
func (s sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s sample) Copy() chunks.Sample           { return s }
