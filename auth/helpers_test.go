package auth

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// t0 is the tests' fixed "now".
var t0 = time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)

// clock is a settable time source for the Authenticator and the JWKS cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var (
	rsaOnce sync.Once
	rsaKey  *rsa.PrivateKey
	rsaKey2 *rsa.PrivateKey
)

// rsaKeys returns two 2048-bit keys, generated once per test binary.
func rsaKeys(t testing.TB) (*rsa.PrivateKey, *rsa.PrivateKey) {
	rsaOnce.Do(func() {
		var err error
		rsaKey, err = rsa.GenerateKey(rand.Reader, 2048)
		if err == nil {
			rsaKey2, err = rsa.GenerateKey(rand.Reader, 2048)
		}
		if err != nil {
			panic(err)
		}
	})
	return rsaKey, rsaKey2
}

func edKey(t testing.TB) ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return k
}

func pemPublic(t testing.TB, pub any) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// claims are a token's claims with iat = now and exp = now + 10 min unless given.
func claims(now time.Time, kv ...any) jwt.MapClaims {
	c := jwt.MapClaims{"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix()}
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		if kv[i+1] == nil {
			delete(c, k)
			continue
		}
		c[k] = kv[i+1]
	}
	return c
}

func signHS(t testing.TB, secret string, c jwt.MapClaims) string {
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
	require.NoError(t, err)
	return s
}

func signWith(t testing.TB, m jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

func newTestAuth(t testing.TB, cfg Config, c *clock) *Authenticator {
	cfg.Enabled = true
	a, err := newAt(cfg, zerolog.Nop(), c.now)
	require.NoError(t, err)
	return a
}
