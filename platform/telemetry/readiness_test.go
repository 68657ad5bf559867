package telemetry

import (
	"context"
	"errors"
	"testing"
)

// A reported check shows its failure without taking the process out of rotation;
// a gating one (or a drain) does.
func TestReadinessGatesOnlyOnGatingChecks(t *testing.T) {
	down := func(context.Context) error { return errors.New("down") }
	r := &Readiness{}
	r.Report("temporal", down)
	ok, failures := r.Status(context.Background())
	if !ok || failures["temporal"] != "down" {
		t.Fatalf("reported failure: ready %v, failures %v", ok, failures)
	}
	r.Gate("temporal")
	if ok, _ := r.Status(context.Background()); ok {
		t.Fatal("a gated check's failure left the process ready")
	}
	r = &Readiness{}
	r.Add("consumer", func(context.Context) error { return nil })
	r.Drain()
	if ok, failures := r.Status(context.Background()); ok || failures["process"] != "draining" {
		t.Fatalf("draining: ready %v, failures %v", ok, failures)
	}
}
