package auth

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Algorithm names JWT_ALGORITHM's values (spec 9.1).
const (
	HS256 = "HS256"
	RS256 = "RS256" // RS384 and RS512 tokens are accepted too
	EdDSA = "EdDSA"
	Auto  = "auto" // chosen from the token's header among the keys configured
)

// Defaults of Queen's configuration (server/include/queen/config.hpp, spec 9.1).
const (
	DefaultAlgorithm           = HS256
	DefaultClockSkew           = 30 * time.Second
	DefaultSkipPaths           = "/health,/metrics/prometheus,/metrics,/"
	DefaultRolesClaim          = "role"
	DefaultRolesArrayClaim     = "roles"
	DefaultJWKSRefreshInterval = time.Hour
	DefaultJWKSTimeout         = 5 * time.Second
)

// Config is Queen's JWT configuration. `comb serve` fills it from the JWT_* environment and
// its flags; the zero value of a field means Queen's default (Defaults fills them).
type Config struct {
	// Enabled switches authentication on (JWT_ENABLED). Off: every route is open and no
	// producerSub is stamped.
	Enabled bool
	// Algorithm is HS256, RS256, EdDSA or auto (JWT_ALGORITHM), case-insensitive.
	Algorithm string
	// Secret is the HS256 key, used as its raw UTF-8 bytes, never base64-decoded (JWT_SECRET,
	// spec 11 #50).
	Secret string
	// PublicKeyPEM is an RSA or Ed25519 public key (PKIX "PUBLIC KEY", PKCS#1 "RSA PUBLIC KEY" or
	// a certificate) for RS256 or EdDSA tokens (JWT_PUBLIC_KEY). It wins over JWKSURL.
	PublicKeyPEM string
	// JWKSURL is an http(s) URL of a JWK set (JWT_JWKS_URL).
	JWKSURL string
	// Issuer and Audience, when set, must match the token's iss and be in its aud
	// (JWT_ISSUER, JWT_AUDIENCE).
	Issuer, Audience string
	// ClockSkew is the leeway on exp, nbf and iat (JWT_CLOCK_SKEW, seconds; default 30 s).
	// Negative means none.
	ClockSkew time.Duration
	// SkipPaths are paths that need no token (JWT_SKIP_PATHS, comma-separated): an exact match,
	// or a prefix match for an entry longer than "/" that ends in "/" (spec 9.1).
	SkipPaths []string
	// RolesClaim is the claim holding one role as a string (JWT_ROLES_CLAIM, default role);
	// RolesArrayClaim the claim holding an array of roles (JWT_ROLES_ARRAY_CLAIM, default roles).
	RolesClaim, RolesArrayClaim string
	// Roles are the role values of the three levels (JWT_ROLE_ADMIN, JWT_ROLE_READ_WRITE,
	// JWT_ROLE_READ_ONLY).
	Roles Roles
	// JWKSRefreshInterval is how old the JWK set may get before it is fetched again
	// (JWT_JWKS_REFRESH_INTERVAL, default 1 h); JWKSTimeout bounds one fetch
	// (JWT_JWKS_TIMEOUT_MS, default 5 s).
	JWKSRefreshInterval, JWKSTimeout time.Duration
	// HTTPClient fetches the JWK set; nil means a client with JWKSTimeout.
	HTTPClient *http.Client
}

// Defaults returns c with every unset field at Queen's default.
func (c Config) Defaults() Config {
	if c.Algorithm == "" {
		c.Algorithm = DefaultAlgorithm
	}
	if c.ClockSkew == 0 {
		c.ClockSkew = DefaultClockSkew
	}
	if c.ClockSkew < 0 {
		c.ClockSkew = 0
	}
	if c.SkipPaths == nil {
		c.SkipPaths = SplitPaths(DefaultSkipPaths)
	}
	if c.RolesClaim == "" {
		c.RolesClaim = DefaultRolesClaim
	}
	if c.RolesArrayClaim == "" {
		c.RolesArrayClaim = DefaultRolesArrayClaim
	}
	if c.Roles.Admin == "" {
		c.Roles.Admin = "admin"
	}
	if c.Roles.ReadWrite == "" {
		c.Roles.ReadWrite = "read-write"
	}
	if c.Roles.ReadOnly == "" {
		c.Roles.ReadOnly = "read-only"
	}
	if c.JWKSRefreshInterval <= 0 {
		c.JWKSRefreshInterval = DefaultJWKSRefreshInterval
	}
	if c.JWKSTimeout <= 0 {
		c.JWKSTimeout = DefaultJWKSTimeout
	}
	return c
}

// SplitPaths splits JWT_SKIP_PATHS: comma-separated, blanks trimmed, empty entries dropped.
func SplitPaths(list string) []string {
	out := []string{}
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// normalizeAlgorithm maps JWT_ALGORITHM case-insensitively to its canonical spelling.
func normalizeAlgorithm(a string) (string, error) {
	for _, known := range []string{HS256, RS256, EdDSA, Auto} {
		if strings.EqualFold(a, known) {
			return known, nil
		}
	}
	return "", fmt.Errorf("JWT_ALGORITHM %q: want HS256, RS256, EdDSA or auto", a)
}

// validate refuses a configuration that cannot verify any token (issue 11: refuse to start
// rather than answer 500 to every request). static is JWT_PUBLIC_KEY parsed (nil when unset).
func (c *Config) validate(static *staticKey) error {
	if c.JWKSURL != "" {
		u, err := url.Parse(c.JWKSURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("JWT_JWKS_URL %q: want an http:// or https:// URL", c.JWKSURL)
		}
	}
	asym := c.JWKSURL != "" || static != nil
	switch c.Algorithm {
	case HS256:
		if c.Secret == "" {
			return fmt.Errorf("JWT_ALGORITHM is HS256 but JWT_SECRET is empty: no token could be verified")
		}
	case RS256, EdDSA:
		if !asym {
			return fmt.Errorf("JWT_ALGORITHM is %s but neither JWT_PUBLIC_KEY nor JWT_JWKS_URL is set: no token could be verified", c.Algorithm)
		}
		if static != nil && static.family != c.Algorithm {
			return fmt.Errorf("JWT_PUBLIC_KEY is a %s key but JWT_ALGORITHM is %s", static.family, c.Algorithm)
		}
	case Auto:
		if c.Secret == "" && !asym {
			return fmt.Errorf("JWT_ALGORITHM is auto but none of JWT_SECRET, JWT_PUBLIC_KEY, JWT_JWKS_URL is set: no token could be verified")
		}
	}
	return nil
}
