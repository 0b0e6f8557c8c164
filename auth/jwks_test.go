package auth

import (
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// jwksServer serves a JWK set that a test can change, counting the fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []map[string]string
	status  int
	fetches atomic.Int64
}

func newJWKSServer(t *testing.T) *jwksServer {
	s := &jwksServer{status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.status != http.StatusOK {
			w.WriteHeader(s.status)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": s.keys})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(status int, keys ...map[string]string) {
	s.mu.Lock()
	s.status, s.keys = status, keys
	s.mu.Unlock()
}

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func rsaJWK(kid string, k *rsa.PublicKey) map[string]string {
	return map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
		"n": b64u(k.N.Bytes()), "e": b64u(big.NewInt(int64(k.E)).Bytes())}
}

func edJWK(kid string, k ed25519.PublicKey) map[string]string {
	return map[string]string{"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": b64u(k)}
}

// spec 9.1: keys from JWT_JWKS_URL, fetched once at start, looked up by kid.
func TestJWKSLookupByKid(t *testing.T) {
	srv := newJWKSServer(t)
	rk, other := rsaKeys(t)
	ek := edKey(t)
	srv.set(http.StatusOK, rsaJWK("k1", &rk.PublicKey), rsaJWK("k2", &other.PublicKey),
		map[string]string{"kty": "oct", "kid": "sym", "k": b64u([]byte("0123456789abcdef"))},
		map[string]string{"kty": "RSA", "kid": "enc", "use": "enc", "n": b64u(rk.N.Bytes()), "e": "AQAB"},
		map[string]string{"kty": "bogus"})
	c := newClock()
	now := c.now()
	a := newTestAuth(t, Config{Algorithm: RS256, JWKSURL: srv.URL}, c)
	require.Equal(t, int64(1), srv.fetches.Load(), "fetched once by New")

	id, err := a.Verify([]byte(signWith(t, jwt.SigningMethodRS256, rk, "k1", claims(now, "sub", "r", "role", "read-only"))))
	require.Nil(t, err)
	require.Equal(t, Identity{"r", ReadOnly}, id)
	_, err = a.Verify([]byte(signWith(t, jwt.SigningMethodRS512, other, "k2", claims(now))))
	require.Nil(t, err, "RS512 with the second key")
	_, err = a.Verify([]byte(signWith(t, jwt.SigningMethodRS256, rk, "k2", claims(now))))
	require.Equal(t, ErrBadSignature, err, "signed by k1, claims k2")
	_, err = a.Verify([]byte(signWith(t, jwt.SigningMethodRS256, rk, "", claims(now))))
	require.Equal(t, "Unknown key ID: ", err.Message, "no kid and two RSA keys: ambiguous")
	require.Equal(t, int64(1), srv.fetches.Load(), "within the minimum gap: no refetch")

	_, err = a.Verify([]byte(signWith(t, jwt.SigningMethodEdDSA, ek, "k1", claims(now))))
	require.Equal(t, "Token uses EdDSA, expected RS256", err.Message)

	e := newTestAuth(t, Config{Algorithm: EdDSA, JWKSURL: srv.URL}, c)
	srv.set(http.StatusOK, edJWK("ed", ek.Public().(ed25519.PublicKey)))
	c.advance(jwksMinGap)
	_, err = e.Verify([]byte(signWith(t, jwt.SigningMethodEdDSA, ek, "", claims(c.now(), "role", "admin"))))
	require.Nil(t, err, "no kid: the only Ed25519 key of the set (fetched again: it was unknown)")
}

// spec 9.1: "refreshed ... on an unknown kid", at most once per jwksMinGap; a key rotated in
// at the identity provider is picked up on its first token.
func TestJWKSUnknownKidRefresh(t *testing.T) {
	srv := newJWKSServer(t)
	rk, other := rsaKeys(t)
	srv.set(http.StatusOK, rsaJWK("k1", &rk.PublicKey))
	c := newClock()
	a := newTestAuth(t, Config{Algorithm: RS256, JWKSURL: srv.URL}, c)

	srv.set(http.StatusOK, rsaJWK("k1", &rk.PublicKey), rsaJWK("k2", &other.PublicKey))
	newTok := []byte(signWith(t, jwt.SigningMethodRS256, other, "k2", claims(c.now())))
	_, err := a.Verify(newTok)
	require.Equal(t, "Unknown key ID: k2", err.Message, "a fetch ran less than the gap ago")
	require.Equal(t, int64(1), srv.fetches.Load())

	c.advance(jwksMinGap)
	_, err = a.Verify(newTok)
	require.Nil(t, err, "unknown kid after the gap: fetched, found")
	require.Equal(t, int64(2), srv.fetches.Load())

	for range 20 {
		_, err = a.Verify([]byte(signWith(t, jwt.SigningMethodRS256, rk, "made-up", claims(c.now()))))
		require.Equal(t, "Unknown key ID: made-up", err.Message)
	}
	require.Equal(t, int64(2), srv.fetches.Load(), "made-up kids do not cause a fetch each")
}

// A JWK set that cannot be fetched at start: 500 "Failed to fetch JWKS" (the client retries),
// then tokens verify once the provider answers.
func TestJWKSUnavailableAtStart(t *testing.T) {
	srv := newJWKSServer(t)
	rk, _ := rsaKeys(t)
	srv.set(http.StatusServiceUnavailable)
	c := newClock()
	a := newTestAuth(t, Config{Algorithm: RS256, JWKSURL: srv.URL}, c)
	tok := []byte(signWith(t, jwt.SigningMethodRS256, rk, "k1", claims(c.now())))
	_, err := a.Verify(tok)
	require.Equal(t, ErrJWKSUnavailable, err)
	require.Equal(t, http.StatusInternalServerError, err.Status)

	srv.set(http.StatusOK, rsaJWK("k1", &rk.PublicKey))
	c.advance(jwksMinGap)
	_, err = a.Verify(tok)
	require.Nil(t, err)
}

// spec 9.1: "refreshed hourly": a stale set is fetched again in the background while the old
// keys keep serving; a key removed from the set stops verifying (the token cache is cleared).
func TestJWKSHourlyRefresh(t *testing.T) {
	srv := newJWKSServer(t)
	rk, other := rsaKeys(t)
	srv.set(http.StatusOK, rsaJWK("k1", &rk.PublicKey))
	c := newClock()
	a := newTestAuth(t, Config{Algorithm: RS256, JWKSURL: srv.URL}, c)
	tok := []byte(signWith(t, jwt.SigningMethodRS256, rk, "k1", claims(c.now(), "exp", nil)))
	_, err := a.Verify(tok)
	require.Nil(t, err)

	srv.set(http.StatusOK, rsaJWK("k2", &other.PublicKey)) // k1 revoked
	c.advance(DefaultJWKSRefreshInterval + time.Second)
	tok2 := []byte(signWith(t, jwt.SigningMethodRS256, rk, "k1", claims(c.now(), "exp", nil)))
	_, err = a.Verify(tok2) // stale: triggers the background fetch, served by the old keys
	require.Nil(t, err)
	deadline := time.Now().Add(5 * time.Second)
	for !a.jwks.holds("k2") {
		require.True(t, time.Now().Before(deadline), "the background refresh did not happen")
		time.Sleep(5 * time.Millisecond)
	}
	_, err = a.Verify(tok)
	require.Equal(t, "Unknown key ID: k1", err.Message, "a revoked key stops verifying, cached tokens included")
}

// holds reports whether the cached set has kid (tests).
func (c *jwksCache) holds(kid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.keys[kid]
	return ok
}
