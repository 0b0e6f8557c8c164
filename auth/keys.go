package auth

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
)

// staticKey is JWT_PUBLIC_KEY parsed: an RSA key verifies RS256/RS384/RS512 tokens, an Ed25519
// key EdDSA tokens.
type staticKey struct {
	key    crypto.PublicKey
	family string // RS256 or EdDSA: the JWT_ALGORITHM the key serves
}

// parsePublicKey parses a PEM public key (PKIX, PKCS#1 RSA or a certificate) with the jwt
// library's parsers.
func parsePublicKey(pemText string) (*staticKey, error) {
	if pemText == "" {
		return nil, nil
	}
	b := []byte(pemText)
	if k, err := jwt.ParseRSAPublicKeyFromPEM(b); err == nil {
		if k.N.BitLen() < 2048 {
			return nil, fmt.Errorf("JWT_PUBLIC_KEY: a %d-bit RSA key is too weak (2048 bits at least)", k.N.BitLen())
		}
		return &staticKey{key: k, family: RS256}, nil
	}
	if k, err := jwt.ParseEdPublicKeyFromPEM(b); err == nil {
		return &staticKey{key: k, family: EdDSA}, nil
	}
	return nil, fmt.Errorf("JWT_PUBLIC_KEY: not a PEM RSA or Ed25519 public key")
}

// family returns the JWT_ALGORITHM that verifies tokens signed with alg: RS256 for the RSA
// PKCS#1 v1.5 family, EdDSA, HS256, or "" for an algorithm comb does not accept (Queen's set).
func family(alg string) string {
	switch alg {
	case "RS256", "RS384", "RS512":
		return RS256
	case "EdDSA":
		return EdDSA
	case "HS256":
		return HS256
	}
	return ""
}

// fits reports whether key can verify tokens of the algorithm family fam.
func fits(key crypto.PublicKey, fam string) bool {
	switch key.(type) {
	case *rsa.PublicKey:
		return fam == RS256
	case ed25519.PublicKey:
		return fam == EdDSA
	}
	return false
}
