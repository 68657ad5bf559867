//go:build stack

package records_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/orderflow/orderflow/platform/records"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// A record is written once whoever comes first, moves until it is final, and is
// the tenant's alone.
func TestARecordIsWrittenOnceMovesUntilFinalAndStaysItsTenants(t *testing.T) {
	ctx := context.Background()
	s := records.NewStore(stacktest.Pool(t))
	tenant, other := stacktest.Name("tenant"), stacktest.Name("tenant")
	r := records.Record{Tenant: tenant, Kind: "shipment", ID: stacktest.Name("shp"), WorkflowID: "shipment:" + tenant + ":http:k",
		Status: "PENDING", Fingerprint: []byte{1, 2}, Body: json.RawMessage(`{"status":"PENDING"}`)}
	first, err := s.Record(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	again := r
	again.Status, again.Body = "OTHER", json.RawMessage(`{"status":"OTHER"}`)
	if second, err := s.Record(ctx, again); err != nil || second.Status != "PENDING" || !second.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("second write of the same workflow: %+v, %v; want the first, PENDING", second, err)
	}
	if moved, err := s.Move(ctx, other, r.WorkflowID, "BOOKED", true, json.RawMessage(`{}`)); err != nil || moved {
		t.Fatalf("another tenant moved the record: %t, %v", moved, err)
	}
	if moved, err := s.Move(ctx, tenant, r.WorkflowID, "BOOKED", true, json.RawMessage(`{"status":"BOOKED"}`)); err != nil || !moved {
		t.Fatalf("move to BOOKED: %t, %v", moved, err)
	}
	if moved, err := s.Move(ctx, tenant, r.WorkflowID, "PENDING", false, json.RawMessage(`{}`)); err != nil || moved {
		t.Fatalf("a final record moved again: %t, %v", moved, err)
	}
	got, err := s.Get(ctx, tenant, r.ID)
	if err != nil || got.Status != "BOOKED" || !got.Final || string(got.Body) != `{"status": "BOOKED"}` {
		t.Fatalf("read back: %+v (%s), %v", got, got.Body, err)
	}
	if _, err := s.Get(ctx, other, r.ID); !errors.Is(err, records.ErrNotFound) {
		t.Fatalf("another tenant read the record: %v", err)
	}
	if _, err := s.Record(ctx, records.Record{Tenant: tenant, Kind: "shipment", ID: "x", WorkflowID: "y", Body: json.RawMessage(`{`)}); err == nil {
		t.Fatal("a body that is not JSON was recorded")
	}
}
