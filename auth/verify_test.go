package auth

import (
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

const secret = "s3cret"

// Each refusal of spec 9.1 with Queen's exact message, and the acceptances around it.
func TestVerifyHS256(t *testing.T) {
	c := newClock()
	a := newTestAuth(t, Config{Algorithm: HS256, Secret: secret}, c)
	now := c.now()
	rk, _ := rsaKeys(t)
	cases := []struct {
		name    string
		token   string
		status  int
		message string
		sub     string
		level   Level
	}{
		{"read-write role and sub (Queen's client tests)", signHS(t, secret, claims(now, "sub", "alice", "username", "alice", "role", "read-write")), 0, "", "alice", ReadWrite},
		{"roles array, numeric id (proxy tokens, spec 11 #49)", signHS(t, secret, claims(now, "sub", "root", "roles", []any{"x", "admin"}, "id", 7)), 0, "", "root", Admin},
		{"no exp: a long-lived API key", signHS(t, secret, claims(now, "exp", nil, "role", "read-only")), 0, "", "", ReadOnly},
		{"unknown role: authenticated, no level", signHS(t, secret, claims(now, "sub", "x", "role", "guest")), 0, "", "x", NoRole},
		{"non-string role is ignored", signHS(t, secret, claims(now, "role", 3)), 0, "", "", NoRole},
		{"expired within the 30 s skew still passes", signHS(t, secret, claims(now, "exp", now.Add(-20*time.Second).Unix(), "role", "read-only")), 0, "", "", ReadOnly},
		{"expired past the skew", signHS(t, secret, claims(now, "exp", now.Add(-31*time.Second).Unix())), 401, "Token has expired", "", 0},
		{"nbf in the future", signHS(t, secret, claims(now, "nbf", now.Add(time.Minute).Unix())), 401, "Token is not valid yet", "", 0},
		{"iat in the future", signHS(t, secret, claims(now, "iat", now.Add(time.Minute).Unix())), 401, "Token is not valid yet", "", 0},
		{"wrong secret", signHS(t, "wrong", claims(now, "role", "admin")), 401, "Invalid token signature", "", 0},
		{"forged and expired: the signature is what is reported", signHS(t, "wrong", claims(now, "exp", now.Add(-time.Hour).Unix())), 401, "Invalid token signature", "", 0},
		{"RS256 token against an HS256 broker", signWith(t, jwt.SigningMethodRS256, rk, "", claims(now)), 401, "Token uses RS256, expected HS256", "", 0},
		{"alg none", signWith(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", claims(now, "role", "admin")), 401, "Token uses none, expected HS256", "", 0},
		{"garbage", "not.a.jwt", 401, "", "", 0},
		{"two segments", "abc.def", 401, "", "", 0},
		{"sub must be a string", signHS(t, secret, claims(now, "sub", 42)), 401, "Invalid token: sub must be a string", "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := a.Verify([]byte(tc.token))
			if tc.status == 0 {
				require.Nil(t, err)
				require.Equal(t, Identity{Subject: tc.sub, Level: tc.level}, id)
				return
			}
			require.NotNil(t, err)
			require.Equal(t, tc.status, err.Status)
			if tc.message != "" {
				require.Equal(t, tc.message, err.Message)
			} else {
				require.Contains(t, err.Message, "Invalid token: ")
			}
		})
	}
}

// spec 9.1: iss and aud are checked only when configured.
func TestVerifyIssuerAudience(t *testing.T) {
	c := newClock()
	now := c.now()
	a := newTestAuth(t, Config{Algorithm: HS256, Secret: secret, Issuer: "idp", Audience: "comb"}, c)
	ok := signHS(t, secret, claims(now, "iss", "idp", "aud", []any{"other", "comb"}, "role", "read-only"))
	_, err := a.Verify([]byte(ok))
	require.Nil(t, err)
	_, err = a.Verify([]byte(signHS(t, secret, claims(now, "iss", "evil", "aud", "comb"))))
	require.Equal(t, ErrBadIssuer, err)
	_, err = a.Verify([]byte(signHS(t, secret, claims(now, "iss", "idp", "aud", "other"))))
	require.Equal(t, ErrBadAudience, err)
	_, err = a.Verify([]byte(signHS(t, secret, claims(now, "iss", "idp"))))
	require.Equal(t, ErrBadAudience, err, "no aud while one is required")
	_, err = a.Verify([]byte(signHS(t, secret, claims(now, "aud", "comb"))))
	require.Equal(t, ErrBadIssuer, err, "no iss while one is required")

	open := newTestAuth(t, Config{Algorithm: HS256, Secret: secret}, c)
	_, err = open.Verify([]byte(signHS(t, secret, claims(now, "iss", "anyone", "aud", "anything"))))
	require.Nil(t, err)
}

// spec 9.1: role claim names and role values are configurable.
func TestVerifyCustomRoles(t *testing.T) {
	c := newClock()
	now := c.now()
	a := newTestAuth(t, Config{Algorithm: HS256, Secret: secret, RolesClaim: "grp", RolesArrayClaim: "groups",
		Roles: Roles{Admin: "ops", ReadWrite: "svc", ReadOnly: "viewer"}}, c)
	id, err := a.Verify([]byte(signHS(t, secret, claims(now, "grp", "svc"))))
	require.Nil(t, err)
	require.Equal(t, ReadWrite, id.Level)
	id, err = a.Verify([]byte(signHS(t, secret, claims(now, "groups", []any{"viewer", "ops"}))))
	require.Nil(t, err)
	require.Equal(t, Admin, id.Level)
	id, err = a.Verify([]byte(signHS(t, secret, claims(now, "role", "admin"))))
	require.Nil(t, err)
	require.Equal(t, NoRole, id.Level, "the default claim and value mean nothing once renamed")
}

// spec 9.1: RS256 accepts RS384 and RS512 tokens; EdDSA through a PEM key.
func TestVerifyPublicKeyPEM(t *testing.T) {
	c := newClock()
	now := c.now()
	rk, other := rsaKeys(t)
	a := newTestAuth(t, Config{Algorithm: RS256, PublicKeyPEM: pemPublic(t, &rk.PublicKey)}, c)
	for _, m := range []jwt.SigningMethod{jwt.SigningMethodRS256, jwt.SigningMethodRS384, jwt.SigningMethodRS512} {
		id, err := a.Verify([]byte(signWith(t, m, rk, "any-kid", claims(now, "sub", "r", "role", "read-only"))))
		require.Nil(t, err, m.Alg())
		require.Equal(t, Identity{"r", ReadOnly}, id)
	}
	_, err := a.Verify([]byte(signWith(t, jwt.SigningMethodRS256, other, "", claims(now))))
	require.Equal(t, ErrBadSignature, err)
	_, err = a.Verify([]byte(signWith(t, jwt.SigningMethodPS256, rk, "", claims(now))))
	require.Equal(t, "Token uses PS256, expected RS256", err.Message)

	ek := edKey(t)
	e := newTestAuth(t, Config{Algorithm: "eddsa", PublicKeyPEM: pemPublic(t, ek.Public())}, c)
	id, err := e.Verify([]byte(signWith(t, jwt.SigningMethodEdDSA, ek, "", claims(now, "sub", "e", "role", "admin"))))
	require.Nil(t, err)
	require.Equal(t, Identity{"e", Admin}, id)
	_, err = e.Verify([]byte(signWith(t, jwt.SigningMethodEdDSA, edKey(t), "", claims(now))))
	require.Equal(t, ErrBadSignature, err)
	_, err = e.Verify([]byte(signHS(t, secret, claims(now))))
	require.Equal(t, "Token uses HS256, expected EdDSA", err.Message)
}

// spec 9.1: auto picks the key from the token's header among those configured.
func TestVerifyAuto(t *testing.T) {
	c := newClock()
	now := c.now()
	ek := edKey(t)
	a := newTestAuth(t, Config{Algorithm: "AUTO", Secret: secret, PublicKeyPEM: pemPublic(t, ek.Public())}, c)
	_, err := a.Verify([]byte(signHS(t, secret, claims(now))))
	require.Nil(t, err)
	_, err = a.Verify([]byte(signWith(t, jwt.SigningMethodEdDSA, ek, "", claims(now))))
	require.Nil(t, err)
	rk, _ := rsaKeys(t)
	_, err = a.Verify([]byte(signWith(t, jwt.SigningMethodRS256, rk, "", claims(now))))
	require.Equal(t, "Token uses RS256, but JWT_PUBLIC_KEY is a EdDSA key", err.Message)
	_, err = a.Verify([]byte(signWith(t, jwt.SigningMethodHS384, []byte(secret), "", claims(now))))
	require.Equal(t, "Unsupported algorithm: HS384", err.Message)

	hsOnly := newTestAuth(t, Config{Algorithm: Auto, Secret: secret}, c)
	_, err = hsOnly.Verify([]byte(signWith(t, jwt.SigningMethodEdDSA, ek, "", claims(now))))
	require.Equal(t, http.StatusUnauthorized, err.Status)
}

// issue 11: refuse to start on a configuration that cannot verify anything.
func TestNewRefusesUselessConfig(t *testing.T) {
	rk, _ := rsaKeys(t)
	ek := edKey(t)
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"HS256 without a secret", Config{Algorithm: HS256}, "JWT_SECRET is empty"},
		{"default algorithm without a secret", Config{}, "JWT_SECRET is empty"},
		{"RS256 with no key source", Config{Algorithm: RS256, Secret: "x"}, "neither JWT_PUBLIC_KEY nor JWT_JWKS_URL"},
		{"EdDSA with no key source", Config{Algorithm: EdDSA}, "neither JWT_PUBLIC_KEY nor JWT_JWKS_URL"},
		{"auto with nothing", Config{Algorithm: Auto}, "none of JWT_SECRET"},
		{"unknown algorithm", Config{Algorithm: "ES256", Secret: "x"}, `JWT_ALGORITHM "ES256"`},
		{"unparsable PEM", Config{Algorithm: RS256, PublicKeyPEM: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"}, "not a PEM RSA or Ed25519"},
		{"RSA key for EdDSA", Config{Algorithm: EdDSA, PublicKeyPEM: pemPublic(t, &rk.PublicKey)}, "is a RS256 key but JWT_ALGORITHM is EdDSA"},
		{"Ed25519 key for RS256", Config{Algorithm: RS256, PublicKeyPEM: pemPublic(t, ek.Public())}, "is a EdDSA key but JWT_ALGORITHM is RS256"},
		{"JWKS URL that is not http", Config{Algorithm: RS256, JWKSURL: "file:///etc/keys"}, "want an http:// or https:// URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Enabled = true
			_, err := New(tc.cfg, zerolog.Nop())
			require.ErrorContains(t, err, tc.want)
		})
	}
	a, err := New(Config{}, zerolog.Nop())
	require.NoError(t, err, "disabled: nothing to verify, nothing to refuse")
	require.False(t, a.Enabled())
}

// spec 9.1 levels: admin ⊇ read-write ⊇ read-only; a token without a known role passes none.
func TestCheckLevels(t *testing.T) {
	c := newClock()
	now := c.now()
	a := newTestAuth(t, Config{Algorithm: HS256, Secret: secret}, c)
	tok := func(role string) []byte {
		return []byte("Bearer " + signHS(t, secret, claims(now, "sub", role, "role", role)))
	}
	need := []Level{Public, ReadOnly, ReadWrite, Admin}
	grants := map[string][]bool{ // allowed per need, in the order above
		"admin":      {true, true, true, true},
		"read-write": {true, true, true, false},
		"read-only":  {true, true, false, false},
		"guest":      {true, false, false, false},
	}
	for role, allowed := range grants {
		for i, n := range need {
			id, err := a.Check([]byte("/api/v1/x"), tok(role), n)
			if allowed[i] {
				require.Nil(t, err, "%s on %s", role, n)
				if n != Public {
					require.Equal(t, role, id.Subject)
				}
			} else {
				require.Equal(t, ErrForbidden, err, "%s on %s", role, n)
			}
		}
	}
	_, err := a.Check([]byte("/api/v1/push"), nil, ReadWrite)
	require.Equal(t, ErrNoToken, err)
	_, err = a.Check([]byte("/api/v1/push"), []byte(""), ReadWrite)
	require.Equal(t, ErrNoToken, err)
	id, err := a.Check([]byte("/health"), nil, ReadWrite)
	require.Nil(t, err, "a skip path needs no token whatever the level")
	require.Equal(t, Identity{}, id)

	var off *Authenticator
	_, err = off.Check([]byte("/api/v1/push"), nil, Admin)
	require.Nil(t, err, "no authenticator: everything open")
}

// The verified-token cache answers repeat tokens without a signature check, but never past the
// token's exp plus the skew.
func TestVerifyCacheHonoursExp(t *testing.T) {
	c := newClock()
	now := c.now()
	a := newTestAuth(t, Config{Algorithm: HS256, Secret: secret}, c)
	tok := []byte(signHS(t, secret, claims(now, "exp", now.Add(time.Minute).Unix(), "role", "read-only")))
	_, err := a.Verify(tok)
	require.Nil(t, err)
	require.Equal(t, 1, a.cache.len())
	c.advance(time.Minute + 29*time.Second)
	_, err = a.Verify(tok)
	require.Nil(t, err, "inside exp + 30 s skew")
	c.advance(2 * time.Second)
	_, err = a.Verify(tok)
	require.Equal(t, ErrExpired, err, "past exp + skew: the cache entry is dead and verification says expired")
}

// A cached token is trusted at most cacheMaxAge without a new signature check: after a secret
// change the old tokens stop working within that time.
func TestVerifyCacheMaxAge(t *testing.T) {
	c := newClock()
	now := c.now()
	a := newTestAuth(t, Config{Algorithm: HS256, Secret: secret}, c)
	tok := []byte(signHS(t, secret, claims(now, "exp", nil, "role", "read-only")))
	_, err := a.Verify(tok)
	require.Nil(t, err)
	a.secret = []byte("rotated")
	_, err = a.Verify(tok)
	require.Nil(t, err, "served from the cache")
	c.advance(cacheMaxAge)
	_, err = a.Verify(tok)
	require.Equal(t, ErrBadSignature, err)
}

func TestTokenCacheBounded(t *testing.T) {
	tc := newTokenCache()
	now := t0
	for i := range cacheMaxEntries + 100 {
		tc.put(string(rune(i))+"-token", Identity{Subject: "s"}, now.Add(time.Minute), now)
	}
	require.LessOrEqual(t, tc.len(), cacheMaxEntries)
	long := make([]byte, cacheMaxTokenBytes+1)
	tc.clear()
	tc.put(string(long), Identity{}, now.Add(time.Minute), now)
	require.Equal(t, 0, tc.len(), "tokens over 4 KiB are not kept")
}
