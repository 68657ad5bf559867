package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
)

// scripted is an intake that answers each submit with the next of its results.
type scripted struct {
	kinds   []ingress.Kind
	answers []intake.Result
}

func (s *scripted) Kinds() []ingress.Kind { return s.kinds }

func (s *scripted) SubmitEvent(context.Context, ingress.Kind, string, string, ingress.Request) intake.Result {
	out := s.answers[0]
	s.answers = s.answers[1:]
	return out
}

func (s *scripted) SubmitCloudEvent(ctx context.Context, k ingress.Kind, tenant, _, id string, req ingress.Request) intake.Result {
	return s.SubmitEvent(ctx, k, tenant, id, req)
}

type everyTenant struct{}

func (everyTenant) Exists(context.Context, string) (bool, error) { return true, nil }

// An event is counted once: as a start when it started a workflow, even when
// the answer of the attempt that started it was lost and the next attempt found
// it placed; as a duplicate only when no attempt of this delivery sent a start
// (a redelivery).
func TestStartsAndDuplicatesCountEachEventOnce(t *testing.T) {
	lost := intake.Result{Kind: intake.Unavailable, Err: &intake.UnavailableError{What: "workflow start", Err: errors.New("deadline exceeded")}}
	for _, row := range []struct {
		name              string
		answers           []intake.Result
		starts, duplicate float64
	}{
		{"started", []intake.Result{{Kind: intake.Created}}, 1, 0},
		{"a redelivery", []intake.Result{{Kind: intake.Replayed}}, 0, 1},
		{"a start whose answer was lost", []intake.Result{lost, {Kind: intake.Replayed}}, 1, 0},
		{"a start that failed, then started", []intake.Result{lost, lost, {Kind: intake.Created}}, 1, 0},
	} {
		t.Run(row.name, func(t *testing.T) {
			in := &scripted{kinds: []ingress.Kind{orders.New(nil, nil)}, answers: row.answers}
			m := NewMetrics(prometheus.NewRegistry())
			c := New(Options{}, nil, nil, nil, nil, in, everyTenant{}, slog.New(slog.NewTextHandler(io.Discard, nil)), m, nil)
			msg := kafka.Message{Value: []byte(fmt.Sprintf(`{"eventId":"e-1","tenant":"acme","order":%s}`, orderJSON))}
			if out, _ := c.process(context.Background(), msg, nil); out != done {
				t.Fatal("the event was not settled")
			}
			if len(in.answers) != 0 {
				t.Fatalf("%d answers left unasked", len(in.answers))
			}
			if s, d := testutil.ToFloat64(m.starts), testutil.ToFloat64(m.duplicates); s != row.starts || d != row.duplicate {
				t.Fatalf("starts %v, duplicates %v; want %v, %v", s, d, row.starts, row.duplicate)
			}
		})
	}
}
