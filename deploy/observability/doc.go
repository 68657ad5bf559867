// Package observability holds orderflow's Grafana dashboard and Prometheus alert
// rules, and their form for the Prometheus Operator and Grafana's sidecar (a
// kustomization: the PrometheusRule generated from the rules, the dashboard's
// ConfigMap); its tests check them against the metrics the code defines and the
// binaries export.
package observability
