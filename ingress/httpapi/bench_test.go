package httpapi

import "testing"

func BenchmarkParseIdempotencyKey(b *testing.B) {
	v := []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseIdempotencyKey(v); err != nil {
			b.Fatal(err)
		}
	}
}
