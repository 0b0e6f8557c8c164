package seal

import (
	"strings"
	"testing"
)

var benchPlain = []byte(`{"pad":"` + strings.Repeat("x", 190) + `"}`)

// BenchmarkSeal200: one 200-byte payload sealed (push path, per message).
func BenchmarkSeal200(b *testing.B) {
	r := ring(b, hexA)
	b.SetBytes(int64(len(benchPlain)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Seal(benchPlain); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen200: one 200-byte payload opened (pop and DLQ path, per message).
func BenchmarkOpen200(b *testing.B) {
	r := ring(b, hexA)
	s, err := r.Seal(benchPlain)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchPlain)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Open(s); err != nil {
			b.Fatal(err)
		}
	}
}
