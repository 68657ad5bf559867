package consumer

import "testing"

func BenchmarkDecodeEvent(b *testing.B) {
	value := []byte(`{"eventId":"e1","tenant":"acme","order":` + orderJSON + `}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ordersOnly.DecodeEvent(value); err != nil {
			b.Fatal(err)
		}
	}
}
