package main

import (
	"math"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// The figures are the run's own ratios: CPU summed over every process, the API's
// and PostgreSQL's share of a POST against Temporal's share of a raw start.
func TestFiguresAreTheRunsRatios(t *testing.T) {
	rs := []Result{
		{Scenario: "1. baseline start", CPUPerOp: map[string]float64{"temporal": 8, "temporal db": 2, "load generator": 1}},
		{Scenario: "2. HTTP start", CPUPerOp: map[string]float64{"temporal": 9, "api": 0.8, "postgres": 0.4}},
		{Scenario: "3. HTTP replay", P99ms: 9, CPUPerOp: map[string]float64{"api": 0.1}},
		{Scenario: "6. end to end (HTTP until PAID)", CPUPerOp: map[string]float64{"temporal": 50, "worker": 10, "postgres": 4}},
		{Scenario: "6a. baseline: raw workflow, 1 no-op activity", CPUPerOp: map[string]float64{"temporal": 45, "load generator": 5}},
		{Scenario: "6b. baseline: raw workflow, order's shape (4 no-op activities)", CPUPerOp: map[string]float64{"temporal": 90}},
		{Scenario: "8b. at rest: POST, Prefer: wait → 201 PAID", P50ms: 260},
		{Scenario: "8e. baseline: raw Update-with-Start", P50ms: 250},
	}
	want := []struct {
		ratio float64
		met   bool
	}{{64.0 / 50, false}, {64.0 / 90, true}, {50.0 / 90, false}, {0, false}, {1.2 / 10, true}, {0, true}, {0, false}, {260.0 / 250, true}}
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

// A paid order's cost in the engine's terms: its history's events and Temporal
// Cloud's actions (local activities of one workflow task are one action; each
// activity attempt is one), and its CPU and latency beside DBOS's.
func TestEngineFigures(t *testing.T) {
	ev := func(t enumspb.EventType) *historypb.HistoryEvent { return &historypb.HistoryEvent{EventType: t} }
	marker := func() *historypb.HistoryEvent {
		return &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_MARKER_RECORDED, Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{
			MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{MarkerName: "LocalActivity"}}}
	}
	retried := &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, Attributes: &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{
		ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{Attempt: 3}}}
	task := []*historypb.HistoryEvent{ev(enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED), ev(enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED), ev(enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)}
	var h []*historypb.HistoryEvent
	h = append(h, ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED))
	h = append(h, task...)
	h = append(h, ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED), marker(), ev(enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED), retried,
		ev(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED))
	h = append(h, task...)
	h = append(h, marker(), marker(), ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED))
	var w EngineWork
	tally(&w, h)
	// start 1 + update 1 + the first task's local activity 1 + 3 attempts + the
	// second task's two local activities 1
	if w.Events != 15 || w.WorkflowTasks != 2 || w.LocalActivities != 3 || w.Activities != 1 || w.Updates != 1 || w.Actions != 7 {
		t.Fatalf("tally: %+v", w)
	}

	rs := []Result{
		{Scenario: "6. end to end (HTTP until PAID)", P50ms: 400, Engine: &EngineWork{Events: 12, Actions: 4},
			CPUPerOp: map[string]float64{"temporal": 20, "worker": 10}},
		{Scenario: "6b. baseline: raw workflow, order's shape (4 no-op activities)", CPUPerOp: map[string]float64{"temporal": 80}},
		{Scenario: "6c. peer: DBOS Transact, order's shape (4 no-op steps)", P50ms: 40, CPUPerOp: map[string]float64{"dbos": 2, "postgres": 3}},
	}
	got := engineFigures(rs)
	want := []struct {
		value, ratio float64
		met          bool
	}{{20, 0.25, true}, {12, 0, false}, {4, 0, true}, {30, 6, true}, {400, 10, true}, {80, 16, true}}
	if len(got) != len(want) {
		t.Fatalf("%d figures, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Value != w.value || math.Abs(got[i].Ratio-w.ratio) > 0.005 || got[i].Met != w.met {
			t.Errorf("%s: %.2f ratio %.2f met %v, want %.2f %.2f %v", got[i].Name, got[i].Value, got[i].Ratio, got[i].Met, w.value, w.ratio, w.met)
		}
	}
}
