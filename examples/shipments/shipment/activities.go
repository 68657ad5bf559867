package shipment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/platform/records"
)

// ErrRefused is the error type of a booking the carrier refused for good.
const ErrRefused = "BookingRefused"

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// Activities book with the carrier and settle the shipment's record.
type Activities struct {
	carrier string // the carrier's base URL
	client  *http.Client
	records *records.Store
}

// NewActivities books with the carrier at carrierURL and records in store.
func NewActivities(carrierURL string, client *http.Client, store *records.Store) *Activities {
	return &Activities{carrier: carrierURL, client: client, records: store}
}

// BookInput asks to book the shipment's parcel with Key.
type BookInput struct {
	Shipment Shipment
	Key      string
}

// Booked is the carrier's booking.
type Booked struct {
	ID string `json:"id"`
}

// Book books the parcel with the carrier under the input's key. A 409 (the key's
// first request still runs) and a 5xx are retried with the same key; a 4xx is
// the carrier's refusal, final.
func (a *Activities) Book(ctx context.Context, in BookInput) (Booked, error) {
	body, err := json.Marshal(map[string]any{"reference": in.Shipment.ID, "address": in.Shipment.Address, "weight_grams": in.Shipment.Grams})
	if err != nil {
		return Booked{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.carrier+"/v1/bookings", bytes.NewReader(body))
	if err != nil {
		return Booked{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", in.Key)
	resp, err := a.client.Do(req)
	if err != nil {
		return Booked{}, fmt.Errorf("book %s: %w", in.Shipment.ID, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode == http.StatusOK:
		var b Booked
		if err := json.Unmarshal(msg, &b); err != nil || b.ID == "" {
			return Booked{}, fmt.Errorf("book %s: unreadable answer %q", in.Shipment.ID, msg)
		}
		return b, nil
	case resp.StatusCode == http.StatusConflict || resp.StatusCode >= 500:
		return Booked{}, fmt.Errorf("book %s: carrier answered %d: %s", in.Shipment.ID, resp.StatusCode, bytes.TrimSpace(msg))
	default:
		return Booked{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("carrier refused %s: %d %s", in.Shipment.ID, resp.StatusCode, bytes.TrimSpace(msg)), ErrRefused, nil)
	}
}

// SettleInput is the shipment's end.
type SettleInput struct {
	Shipment  Shipment
	Status    string
	BookingID string
}

// Settle records the shipment's end: what GET answers from then on.
func (a *Activities) Settle(ctx context.Context, in SettleInput) error {
	v := in.Shipment.View(in.Status, in.BookingID)
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// Recorded first, as the ingress does: an event's shipment may reach here
	// before any reader wrote its record.
	if _, err := a.records.Record(ctx, in.Shipment.Record()); err != nil {
		return fmt.Errorf("settle %s: %w", in.Shipment.ID, err)
	}
	if _, err := a.records.Move(ctx, in.Shipment.Tenant, in.Shipment.WorkflowID, in.Status, true, body); err != nil {
		return fmt.Errorf("settle %s: %w", in.Shipment.ID, err)
	}
	return nil
}
