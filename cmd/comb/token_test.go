package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/auth"
)

func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

func pemFile(t *testing.T, typ string, der []byte) string {
	return writeFile(t, "key.pem", pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

func publicPEM(t *testing.T, pub any) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// mint runs `comb token` in process and returns its one line of output.
func mint(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	require.Equal(t, 0, tokenMain(args, &out, &errb, time.Now()), errb.String())
	require.Equal(t, 1, strings.Count(out.String(), "\n"), "one line: the token")
	return strings.TrimSpace(out.String())
}

// Issue 25, "No way to get a token": each token `comb token` mints is accepted by the server's
// authenticator with the level of its role, for every algorithm the server verifies.
func TestTokenIsAcceptedWithItsRole(t *testing.T) {
	secret := "0123456789abcdef0123456789abcdef-secret"
	secretFile := writeFile(t, "secret", []byte(secret+"\n")) // as `openssl rand -hex 32 > F` writes it
	edPub, edKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	edDER, err := x509.MarshalPKCS8PrivateKey(edKey)
	require.NoError(t, err)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)

	cases := []struct {
		name string
		cfg  auth.Config
		key  []string
	}{
		{"HS256", auth.Config{Enabled: true, Algorithm: auth.HS256, Secret: secret}, []string{"--secret-file", secretFile}},
		{"EdDSA", auth.Config{Enabled: true, Algorithm: auth.EdDSA, PublicKeyPEM: publicPEM(t, edPub)}, []string{"--key-file", pemFile(t, "PRIVATE KEY", edDER)}},
		{"RS256 PKCS#1", auth.Config{Enabled: true, Algorithm: auth.RS256, PublicKeyPEM: publicPEM(t, &rsaKey.PublicKey)}, []string{"--key-file", pemFile(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := auth.New(c.cfg, zerolog.Nop())
			require.NoError(t, err)
			for _, r := range []struct {
				role  string
				level auth.Level
			}{{"admin", auth.Admin}, {"read-write", auth.ReadWrite}, {"read-only", auth.ReadOnly}} {
				tok := mint(t, append(c.key, "--role", r.role, "--sub", "alice")...)
				id, aerr := a.Check([]byte("/api/v1/push"), []byte("Bearer "+tok), auth.ReadOnly)
				require.Nil(t, aerr, "%s: %v", r.role, aerr)
				require.Equal(t, r.level, id.Level)
				require.Equal(t, "alice", id.Subject)
				_, aerr = a.Check([]byte("/api/v1/push"), []byte("Bearer "+tok), auth.ReadWrite)
				if r.level == auth.ReadOnly {
					require.Equal(t, auth.ErrForbidden, aerr, "read-only cannot push (403)")
				} else {
					require.Nil(t, aerr)
				}
			}
		})
	}
}

func TestTokenClaims(t *testing.T) {
	secretFile := writeFile(t, "secret", []byte(strings.Repeat("k", 40)))
	now := time.Unix(1_800_000_000, 0)
	var out, errb bytes.Buffer
	require.Equal(t, 0, tokenMain([]string{"--secret-file", secretFile, "--role", "ops", "--roles-claim", "grp",
		"--sub", "bob", "--iss", "me", "--aud", "comb", "--exp", "90m"}, &out, &errb, now))
	claims := jwt.MapClaims{}
	_, _, err := jwt.NewParser().ParseUnverified(strings.TrimSpace(out.String()), claims)
	require.NoError(t, err)
	require.Equal(t, jwt.MapClaims{"grp": "ops", "sub": "bob", "iss": "me", "aud": "comb",
		"iat": float64(1_800_000_000), "exp": float64(1_800_000_000 + 90*60)}, claims)
	require.Empty(t, errb.String())

	out.Reset()
	require.Equal(t, 0, tokenMain([]string{"--secret-file", secretFile, "--role", "admin", "--exp", "0"}, &out, &errb, now))
	claims = jwt.MapClaims{}
	_, _, err = jwt.NewParser().ParseUnverified(strings.TrimSpace(out.String()), claims)
	require.NoError(t, err)
	require.Equal(t, jwt.MapClaims{"role": "admin", "iat": float64(1_800_000_000)}, claims, "--exp 0: an API key without exp")
}

func TestTokenRefusals(t *testing.T) {
	secretFile := writeFile(t, "secret", []byte(strings.Repeat("k", 40)))
	short := writeFile(t, "short", []byte("tiny\n"))
	empty := writeFile(t, "empty", []byte("\n"))
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	pubDER, _ := x509.MarshalPKIXPublicKey(edPub)
	pubFile := pemFile(t, "PUBLIC KEY", pubDER)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--role", "admin"}, "comb token: give exactly one of --secret-file (HS256) and --key-file (RS256, EdDSA)"},
		{[]string{"--secret-file", secretFile}, "comb token: --role is required: admin, read-write or read-only"},
		{[]string{"--secret-file", secretFile, "--role", "admin", "--exp", "-1h"}, "comb token: --exp -1h0m0s: want a positive duration, like 1h or 720h, or 0 for a token that never expires"},
		{[]string{"--secret-file", secretFile, "--role", "admin", "--exp", "7"}, `comb token: --exp "7": want a duration with a unit, like 500ms, 30s, 5m or 1h`},
		{[]string{"--secret-file", empty, "--role", "admin"}, "comb token: --secret-file " + empty + " is empty"},
		{[]string{"--secret-file", secretFile, "--role", "admin", "--alg", "RS256"}, "comb token: --alg RS256 does not sign with a secret; a secret signs HS256"},
		{[]string{"--key-file", pubFile, "--role", "admin"}, "comb token: --key-file " + pubFile + ": no PEM private key (want -----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----)"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		require.Equal(t, 2, tokenMain(c.args, &out, &errb, time.Now()), c.args)
		require.Equal(t, c.want+"\nsee comb token -h\n", errb.String())
		require.Empty(t, out.String())
	}
	var out, errb bytes.Buffer
	require.Equal(t, 0, tokenMain([]string{"--secret-file", short, "--role", "admin"}, &out, &errb, time.Now()))
	require.Equal(t, "comb token: warning: the secret is 4 bytes; under 32, HS256 tokens can be forged by an offline search\n", errb.String())
}
