package consumer

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"
)

// retained is a partition reader over the offsets retention left.
type retained struct {
	first, end int64
	at         int64
	kept       map[int64]bool
}

func (r *retained) SetOffset(offset int64) error { r.at = offset; return nil }
func (r *retained) Offset() int64                { return r.at }
func (r *retained) Lag() int64                   { return r.end - r.at }
func (r *retained) Close() error                 { return nil }
func (r *retained) Bounds(context.Context) (int64, int64, error) {
	return r.first, r.end, nil
}

func (r *retained) FetchMessage(ctx context.Context) (kafka.Message, error) {
	for ; r.at < r.end; r.at++ {
		if r.kept[r.at] && r.at >= r.first {
			m := kafka.Message{Offset: r.at}
			r.at++
			return m, nil
		}
	}
	<-ctx.Done() // nothing more until something is written
	return kafka.Message{}, ctx.Err()
}

// A parked message is read again where it was; one deleted since, whether
// messages follow it or not, comes back gone and counted lost, and the reader
// is not left waiting for it.
func TestRereadFindsAParkedMessageOrSaysItIsGone(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	p := &partition{c: &Consumer{m: m, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	reader := &retained{first: 12, end: 14, kept: map[int64]bool{10: true, 12: true, 13: true}}
	next := int64(-1)

	if f, ok := p.reread(context.Background(), reader, &next, 13); !ok || f.gone || f.m.Offset != 13 || next != 14 {
		t.Fatalf("offset 13: %+v, %v, next %d; want it read, next 14", f, ok, next)
	}
	if f, ok := p.reread(context.Background(), reader, &next, 10); !ok || !f.gone || f.offset != 10 {
		t.Fatalf("offset 10 (before the first retained, 12): %+v, %v; want it gone", f, ok)
	}
	reader.kept = map[int64]bool{}
	reader.first = 14 // everything deleted: nothing to read past it either
	if f, ok := p.reread(context.Background(), reader, &next, 12); !ok || !f.gone || f.offset != 12 {
		t.Fatalf("offset 12 with the partition empty: %+v, %v; want it gone", f, ok)
	}
	if n := testutil.ToFloat64(m.lost); n != 2 {
		t.Fatalf("%v counted lost, want 2", n)
	}
}
