package orders

import "testing"

func BenchmarkDecodeRequest(b *testing.B) {
	b.ReportAllocs()
	data := []byte(valid)
	for b.Loop() {
		if _, err := DecodeRequest(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFingerprint(b *testing.B) {
	r, err := DecodeRequest([]byte(valid))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		Fingerprint(r)
	}
}
