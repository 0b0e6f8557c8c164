package auth

import (
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// BenchmarkCheckCached: one request's auth with a token seen before (the hot path: header,
// skip paths, cache lookup, level).
func BenchmarkCheckCached(b *testing.B) {
	c := newClock()
	a := newTestAuth(b, Config{Algorithm: HS256, Secret: secret}, c)
	h := []byte("Bearer " + signHS(b, secret, claims(c.now(), "sub", "alice", "role", "read-write")))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Check([]byte("/api/v1/push"), h, ReadWrite); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyUncached: a full verification (parse, signature, claims) per token, what the
// cache saves: HS256 and RS256 (2048-bit).
func BenchmarkVerifyUncached(b *testing.B) {
	c := newClock()
	rk, _ := rsaKeys(b)
	for _, tc := range []struct {
		name string
		cfg  Config
		tok  string
	}{
		{"HS256", Config{Algorithm: HS256, Secret: secret}, signHS(b, secret, claims(c.now(), "sub", "a", "role", "read-write"))},
		{"RS256", Config{Algorithm: RS256, PublicKeyPEM: pemPublic(b, &rk.PublicKey)}, signWith(b, jwt.SigningMethodRS256, rk, "", claims(c.now(), "sub", "a", "role", "read-write"))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			a := newTestAuth(b, tc.cfg, c)
			tok := []byte(tc.tok)
			b.ReportAllocs()
			for b.Loop() {
				a.cache.clear()
				if _, err := a.Verify(tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
