package main

import (
	"math"
	"testing"
)

// The figures are the run's own ratios: CPU summed over every process, the API's
// and PostgreSQL's share of a POST against Temporal's share of a raw start.
func TestFiguresAreTheRunsRatios(t *testing.T) {
	rs := []Result{
		{Scenario: "1. baseline start", CPUPerOp: map[string]float64{"temporal": 8, "temporal db": 2, "load generator": 1}},
		{Scenario: "2. HTTP start", CPUPerOp: map[string]float64{"temporal": 9, "api": 0.8, "postgres": 0.4}},
		{Scenario: "3. HTTP replay", P99ms: 6, CPUPerOp: map[string]float64{"api": 0.1}},
		{Scenario: "6. end to end (HTTP until PAID)", CPUPerOp: map[string]float64{"temporal": 50, "worker": 10, "postgres": 4}},
		{Scenario: "6a. baseline: raw workflow, 1 no-op activity", CPUPerOp: map[string]float64{"temporal": 45, "load generator": 5}},
		{Scenario: "6b. baseline: raw workflow, order's shape (4 no-op activities)", CPUPerOp: map[string]float64{"temporal": 90}},
		{Scenario: "8b. at rest: POST, Prefer: wait → 201 PAID", P50ms: 260},
		{Scenario: "8e. baseline: raw Update-with-Start", P50ms: 250},
	}
	want := []struct {
		ratio float64
		met   bool
	}{{64.0 / 50, false}, {64.0 / 90, true}, {1.2 / 10, true}, {0, true}, {0, false}, {260.0 / 250, true}}
	got := figures(rs)
	if len(got) != len(want) {
		t.Fatalf("%d figures, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if math.Abs(got[i].Ratio-w.ratio) > 0.005 || got[i].Met != w.met {
			t.Errorf("%s: ratio %.4f met %v, want %.4f %v", got[i].Name, got[i].Ratio, got[i].Met, w.ratio, w.met)
		}
	}
}

// A postgres backend is Temporal's when its title names one of Temporal's
// databases; orderflow's own and the server's background processes are not.
func TestServesTemporal(t *testing.T) {
	for title, want := range map[string]bool{
		"postgres: orderflow temporal 127.0.0.1(46410) idle":                true,
		"postgres: orderflow temporal_visibility 127.0.0.1(46244) idle\x00": true,
		"postgres: orderflow orderflow_cluster 127.0.0.1(46100) idle":       false,
		"postgres: walwriter":                                false,
		"/usr/lib/postgresql/15/bin/postgres\x00-D\x00/data": false,
	} {
		if got := servesTemporal(title); got != want {
			t.Errorf("%q: %v, want %v", title, got, want)
		}
	}
}
