// Package observability holds orderflow's Grafana dashboard and Prometheus alert
// rules; its tests check them against the metrics the binaries export.
package observability
