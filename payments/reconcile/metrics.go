package reconcile

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the reconciler's, registered in reg.
type Metrics struct {
	Found    *prometheus.CounterVec
	LastPass prometheus.Gauge
	// Passes counts passes by result: completed, or failed (a read that left part
	// of a side unexamined; the next pass reads it again).
	Passes *prometheus.CounterVec
}

// The results of orderflow_reconcile_passes_total.
const (
	passCompleted = "completed"
	passFailed    = "failed"
)

// NewMetrics registers the reconciler's metrics in reg.
func NewMetrics(reg prometheus.Registerer) Metrics {
	m := Metrics{
		Found: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "orderflow_reconcile_discrepancies_total",
			Help: "Discrepancies the reconciler found between the provider, the engine and the ledger, by kind and what was done."},
			[]string{"kind", "action"}),
		LastPass: prometheus.NewGauge(prometheus.GaugeOpts{Name: "orderflow_reconcile_last_pass_timestamp_seconds",
			Help: "When the last reconcile pass this process ran completed, or the process started if none has."}),
		Passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "orderflow_reconcile_passes_total",
			Help: "Reconcile passes this process ran, by result: completed, or failed (the next pass reads again what it left)."},
			[]string{"result"}),
	}
	m.Passes.WithLabelValues(passCompleted)
	m.Passes.WithLabelValues(passFailed)
	// Every pair a pass can count, at zero: an alert sees the series before the
	// first discrepancy.
	for _, kind := range []string{KindChargeWithoutOrder, KindChargeOnUnpaidOrder, KindChargeNotTheOrders} {
		m.Found.WithLabelValues(kind, ActionRefunded)
		m.Found.WithLabelValues(kind, ActionReported)
	}
	m.Found.WithLabelValues(KindWorkflowClosed, ActionRecoveryStarted)
	m.Found.WithLabelValues(KindRefundElsewhere, ActionOrderFollowed)
	m.Found.WithLabelValues(KindRefundElsewhere, ActionReported)
	m.Found.WithLabelValues(KindRefundFailed, ActionOrderFollowed)
	m.Found.WithLabelValues(KindRefundFailed, ActionReported)
	m.Found.WithLabelValues(KindRefundWorkflowEnded, ActionReservationReleased)
	m.Found.WithLabelValues(KindRefundWorkflowEnded, ActionRefundSettled)
	m.Found.WithLabelValues(KindRefundRowLost, ActionRebuilt)
	m.Found.WithLabelValues(KindDispute, ActionOrderFollowed)
	m.Found.WithLabelValues(KindDispute, ActionDisputeNoted)
	m.Found.WithLabelValues(KindRowRebuilt, ActionRebuilt)
	m.Found.WithLabelValues(KindCursorAhead, ActionReread)
	m.Found.WithLabelValues(KindOpenIntent, ActionCancelled)
	for _, kind := range []string{KindWorkflowClosed, KindChargeWithoutOrder, KindChargeOnUnpaidOrder, KindChargeNotTheOrders,
		KindRefundElsewhere, KindRefundFailed, KindRefundWorkflowEnded, KindRefundRowLost, KindDispute, KindOpenIntent, KindUnchecked} {
		m.Found.WithLabelValues(kind, ActionFailed)
	}
	// A process that has completed no pass counts from its start: a fleet that
	// restarted and never completes one is a stalled reconciler too, and the
	// stall alert sees it three intervals later.
	m.LastPass.SetToCurrentTime()
	reg.MustRegister(m.Found, m.LastPass, m.Passes)
	return m
}
