package orderstore

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/orders/order"
)

// openPayments exports how many orders wait on a payment outcome, read from
// Postgres at each scrape (through a partial index, so it stays cheap).
type openPayments struct {
	s      *Store
	desc   *prometheus.Desc
	oldest *prometheus.Desc
}

// OpenPaymentsCollector returns the collector of orderflow_orders_payment_open
// {status="PAYMENT_PENDING"|"PAYMENT_UNKNOWN"|"PAYMENT_ACTION_REQUIRED"}: an order long in PAYMENT_UNKNOWN
// needs an operator (see the README).
func (s *Store) OpenPaymentsCollector() prometheus.Collector {
	return &openPayments{s: s,
		desc: prometheus.NewDesc("orderflow_orders_payment_open",
			"Orders whose payment outcome is not settled, by status.", []string{"status"}, nil),
		oldest: prometheus.NewDesc("orderflow_orders_payment_open_oldest_seconds",
			"How long the oldest order in the status has been there (0 when none is).", []string{"status"}, nil)}
}

func (c *openPayments) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.oldest }

func (c *openPayments) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts := map[order.Status]float64{order.StatusPaymentPending: 0, order.StatusPaymentUnknown: 0, order.StatusActionRequired: 0}
	ages := map[order.Status]float64{order.StatusPaymentPending: 0, order.StatusPaymentUnknown: 0, order.StatusActionRequired: 0}
	rows, err := c.s.db.Query(ctx, `SELECT status, count(*), extract(epoch FROM now() - min(updated_at))::float8
		FROM orders WHERE status IN ('PAYMENT_PENDING', 'PAYMENT_UNKNOWN', 'PAYMENT_ACTION_REQUIRED') GROUP BY status`)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var st order.Status
		var n int64
		var age float64
		if err := rows.Scan(&st, &n, &age); err != nil {
			ch <- prometheus.NewInvalidMetric(c.desc, err)
			return
		}
		counts[st], ages[st] = float64(n), age
	}
	if err := rows.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for st, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, n, string(st))
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, ages[st], string(st))
	}
}
