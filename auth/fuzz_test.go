package auth

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// FuzzTokenFromHeader: any Authorization value gives a suffix of itself, and never a token
// that still starts with a Bearer prefix it should have stripped.
func FuzzTokenFromHeader(f *testing.F) {
	for _, s := range []string{"", "Bearer x", "bearer  y", "BEARER", "Bearer ", "abc.def.ghi", "Basic zz", "bEaReR \x00\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, h []byte) {
		tok := TokenFromHeader(h)
		if len(h) == 0 {
			if tok != nil {
				t.Fatalf("no header gave token %q", tok)
			}
			return
		}
		if !bytes.HasSuffix(h, tok) {
			t.Fatalf("token %q is not a suffix of header %q", tok, h)
		}
		if len(h) > 7 && strings.EqualFold(string(h[:7]), "bearer ") && len(tok) > 0 && tok[0] == ' ' {
			t.Fatalf("token %q keeps the prefix's spaces", tok)
		}
	})
}

// FuzzCheck: whatever the header, Check answers a success with an identity that verification
// of the same token gives, or a 401/403/500 *Error with a message; it never panics. Only
// tokens signed with the secret pass.
func FuzzCheck(f *testing.F) {
	c := newClock()
	now := c.now()
	a := newTestAuth(f, Config{Algorithm: Auto, Secret: secret}, c)
	good := signHS(f, secret, claims(now, "sub", "alice", "role", "read-write"))
	f.Add([]byte("Bearer " + good))
	f.Add([]byte(good))
	f.Add([]byte("Bearer " + signHS(f, "wrong", claims(now, "role", "admin"))))
	f.Add([]byte("Bearer " + signHS(f, secret, claims(now, "exp", now.Add(-time.Hour).Unix()))))
	f.Add([]byte("Bearer eyJhbGciOiJub25lIn0.eyJyb2xlIjoiYWRtaW4ifQ."))
	f.Add([]byte("Bearer not.a.jwt"))
	f.Add([]byte("Bearer ...."))
	f.Fuzz(func(t *testing.T, h []byte) {
		id, err := a.Check([]byte("/api/v1/push"), h, ReadWrite)
		if err != nil {
			if err.Message == "" || (err.Status != 401 && err.Status != 403 && err.Status != 500) {
				t.Fatalf("header %q: bad refusal %+v", h, err)
			}
			return
		}
		// A pass must be a token signed with the secret: verify it again on an authenticator
		// with an empty cache.
		fresh := newTestAuth(t, Config{Algorithm: Auto, Secret: secret}, c)
		id2, err2 := fresh.Verify(TokenFromHeader(h))
		if err2 != nil || id2 != id {
			t.Fatalf("header %q passed with %+v but fresh verification gives %+v, %v", h, id, id2, err2)
		}
	})
}
