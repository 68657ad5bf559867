package consumer

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the consumer's Prometheus metrics.
type Metrics struct {
	consumed      prometheus.Counter
	starts        prometheus.Counter
	duplicates    prometheus.Counter
	deadLettered  prometheus.Counter
	commitSeconds prometheus.Histogram
	eventSeconds  prometheus.Histogram
	startSeconds  prometheus.Histogram
	lag           *prometheus.GaugeVec
	uncommitted   *prometheus.GaugeVec
	rebalances    prometheus.Counter
	generation    prometheus.Gauge
	owned         prometheus.Gauge
	staleCommits  prometheus.Counter
	budgetWaits   prometheus.Counter
	parked        prometheus.Counter
	outOfRange    *prometheus.CounterVec
	lost          prometheus.Counter
}

// NewMetrics registers the consumer's metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		consumed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_consumer_messages_total", Help: "Messages fetched from the requests topic.",
		}),
		starts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_consumer_workflow_starts_total", Help: "Events turned into new workflow starts.",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_consumer_duplicates_total", Help: "Redelivered events absorbed without a new start.",
		}),
		deadLettered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_consumer_dead_lettered_total", Help: "Poison messages sent to the dead-letter topic.",
		}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "orderflow_consumer_commit_duration_seconds", Help: "Latency of offset commits.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		eventSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "orderflow_consumer_event_duration_seconds", Help: "Time to settle one event (dedup, workflow start, processed_events row), first attempt.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		startSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "orderflow_consumer_start_duration_seconds", Help: "Latency of the workflow starts of new events: the part of an event's time spent in Temporal.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "orderflow_consumer_lag_messages", Help: "Messages behind the partition's end offset (the broker's high watermark, as of the last fetch).",
		}, []string{"partition"}),
		uncommitted: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "orderflow_consumer_uncommitted_messages",
			Help: "Messages a partition holds fetched but not yet committed (bounded by CONSUMER_MAX_UNCOMMITTED, and by 64 times it behind a parked event: those are offsets, not bodies).",
		}, []string{"partition"}),
		rebalances: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_consumer_rebalances_total", Help: "Consumer-group generations this member joined.",
		}),
		generation: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "orderflow_consumer_generation", Help: "The consumer-group generation this member is in.",
		}),
		owned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "orderflow_consumer_partitions_owned", Help: "Partitions of the requests topic assigned to this member.",
		}),
		staleCommits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_consumer_commits_refused_stale_total", Help: "Offset commits the broker refused because the group had moved to another generation.",
		}),
		budgetWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_consumer_budget_waits_total", Help: "Events that waited for their tenant's request budget (TENANT_RATE, api limits set): never dropped or dead-lettered for it.",
		}),
		parked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_consumer_parked_total", Help: "Events over their tenant's budget parked out of their partition's window, with its tenant's part of the waiting room (a quarter of CONSUMER_MAX_UNCOMMITTED) full: read again from the topic as the budget allows, so the other tenants' events behind them go on.",
		}),
		outOfRange: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orderflow_consumer_offset_out_of_range_total",
			Help: "Times a partition's offset was outside what the broker holds: beyond_end (the topic was recreated or offsets restored from elsewhere; re-read from the first offset) or before_start (retention deleted events before they were read).",
		}, []string{"partition", "position"}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_consumer_offsets_deleted_unread_total",
			Help: "Offsets retention deleted before the consumer read them (before_start): events that never became orders.",
		}),
	}
	reg.MustRegister(m.consumed, m.starts, m.duplicates, m.deadLettered, m.commitSeconds, m.eventSeconds, m.startSeconds, m.lag, m.uncommitted,
		m.rebalances, m.generation, m.owned, m.staleCommits, m.budgetWaits, m.parked, m.outOfRange, m.lost)
	return m
}
