package auth

import (
	"errors"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/rs/zerolog"
)

// Identity is who a verified token speaks for.
type Identity struct {
	// Subject is the token's sub ("" when it has none): stamped as producerSub (spec 1.5).
	Subject string
	// Level is the highest level its roles grant (NoRole when none is known).
	Level Level
}

// Authenticator checks requests against a Config. A nil *Authenticator, or one whose Config is
// not Enabled, lets every request through with an empty Identity. Safe for concurrent use.
type Authenticator struct {
	cfg    Config
	secret []byte
	static *staticKey
	jwks   *jwksCache
	parser *jwt.Parser
	cache  *tokenCache
	now    func() time.Time
	log    zerolog.Logger
}

// New validates cfg and returns its Authenticator. With JWKSURL set it fetches the JWK set
// once (bounded by JWKSTimeout); a failed fetch is logged and retried on the first token, as
// Queen does, so that an identity provider that is down does not keep the broker from starting.
//
// Errors: a configuration that cannot verify any token (see Config and package doc).
func New(cfg Config, log zerolog.Logger) (*Authenticator, error) {
	return newAt(cfg, log, time.Now)
}

func newAt(cfg Config, log zerolog.Logger, now func() time.Time) (*Authenticator, error) {
	cfg = cfg.Defaults()
	a := &Authenticator{cfg: cfg, cache: newTokenCache(), now: now, log: log}
	if !cfg.Enabled {
		return a, nil
	}
	alg, err := normalizeAlgorithm(cfg.Algorithm)
	if err != nil {
		return nil, err
	}
	a.cfg.Algorithm = alg
	if a.static, err = parsePublicKey(cfg.PublicKeyPEM); err != nil {
		return nil, err
	}
	if err := a.cfg.validate(a.static); err != nil {
		return nil, err
	}
	a.secret = []byte(cfg.Secret)
	opts := []jwt.ParserOption{jwt.WithLeeway(a.cfg.ClockSkew), jwt.WithIssuedAt(), jwt.WithTimeFunc(now)}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	a.parser = jwt.NewParser(opts...)
	if cfg.JWKSURL != "" && a.static == nil && alg != HS256 {
		client := cfg.HTTPClient
		if client == nil {
			client = &http.Client{Timeout: a.cfg.JWKSTimeout}
		}
		a.jwks = &jwksCache{url: cfg.JWKSURL, client: client, refresh: a.cfg.JWKSRefreshInterval,
			timeout: a.cfg.JWKSTimeout, log: log, now: now, onChange: a.cache.clear}
		a.jwks.mu.Lock()
		done := a.jwks.startFetchLocked(false)
		a.jwks.mu.Unlock()
		<-done
	}
	return a, nil
}

// Enabled reports whether requests need tokens.
func (a *Authenticator) Enabled() bool { return a != nil && a.cfg.Enabled }

// Check authenticates a request for a route of level need at path (the raw request path, as
// routed). authorization is the Authorization header's value (nil when absent). It returns the
// token's identity, or the *Error to answer (spec 9.1: 401 for a missing or bad token, 403 for
// a role below need, 500 when the JWK set cannot be fetched).
//
// Public routes and JWT_SKIP_PATHS pass without a token and with an empty Identity.
func (a *Authenticator) Check(path, authorization []byte, need Level) (Identity, *Error) {
	if !a.Enabled() || need == Public || skipPath(a.cfg.SkipPaths, path) {
		return Identity{}, nil
	}
	tok := TokenFromHeader(authorization)
	if tok == nil {
		return Identity{}, ErrNoToken
	}
	id, err := a.Verify(tok)
	if err != nil {
		return Identity{}, err
	}
	if !id.Level.Allows(need) {
		return id, ErrForbidden
	}
	return id, nil
}

// Verify checks one token: signature, algorithm, exp/nbf/iat with the clock skew, iss and aud.
// A token verified before and still valid is answered from the cache without a signature
// check.
func (a *Authenticator) Verify(token []byte) (Identity, *Error) {
	if len(token) == 0 {
		return Identity{}, errEmptyToken
	}
	if len(token) > MaxTokenBytes {
		return Identity{}, errTokenTooLong
	}
	now := a.now()
	if id, ok := a.cache.get(token, now); ok {
		return id, nil
	}
	s := string(token)
	claims := jwt.MapClaims{}
	_, err := a.parser.ParseWithClaims(s, claims, a.keyFor)
	if err != nil {
		return Identity{}, a.classify(err, claims)
	}
	id, until, aerr := a.identity(claims, now)
	if aerr != nil {
		return Identity{}, aerr
	}
	a.cache.put(s, id, until, now)
	return id, nil
}

// identity reads sub and the roles, and how long the token may be trusted from the cache.
func (a *Authenticator) identity(claims jwt.MapClaims, now time.Time) (Identity, time.Time, *Error) {
	var id Identity
	if v, ok := claims["sub"]; ok && v != nil {
		sub, ok := v.(string)
		if !ok {
			return id, now, errSubjectNotString
		}
		id.Subject = sub
	}
	var names []string
	if r, ok := claims[a.cfg.RolesClaim].(string); ok {
		names = append(names, r)
	}
	switch rs := claims[a.cfg.RolesArrayClaim].(type) {
	case []any:
		for _, r := range rs {
			if s, ok := r.(string); ok {
				names = append(names, s)
			}
		}
	case string:
		names = append(names, rs)
	}
	id.Level = a.cfg.Roles.level(names...)
	until := now.Add(cacheMaxAge)
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		if e := exp.Add(a.cfg.ClockSkew); e.Before(until) {
			until = e
		}
	}
	return id, until, nil
}

// keyFor is the jwt.Keyfunc: it checks the token's alg against JWT_ALGORITHM (spec 9.1) and
// picks the key: the secret for HS256, JWT_PUBLIC_KEY, or the JWK set by kid.
func (a *Authenticator) keyFor(t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	fam := family(alg)
	if a.cfg.Algorithm != Auto && fam != a.cfg.Algorithm {
		return nil, wrongAlgorithm(alg, a.cfg.Algorithm)
	}
	switch fam {
	case "":
		return nil, unauthorized("Unsupported algorithm: " + alg)
	case HS256:
		if len(a.secret) == 0 {
			return nil, unauthorized("Token uses HS256, but no JWT_SECRET is configured")
		}
		return a.secret, nil
	}
	if a.static != nil {
		if !fits(a.static.key, fam) {
			return nil, unauthorized("Token uses " + alg + ", but JWT_PUBLIC_KEY is a " + a.static.family + " key")
		}
		return a.static.key, nil
	}
	if a.jwks == nil {
		return nil, unauthorized("Token uses " + alg + ", but no public key or JWKS URL is configured")
	}
	kid, _ := t.Header["kid"].(string)
	k, err := a.jwks.key(kid, fam)
	if err != nil {
		return nil, err
	}
	return k, nil
}

// classify maps the jwt library's errors to Queen's messages (spec 9.1). The signature is
// checked before the claims, so a forged token is never answered "expired". A token without
// the aud or iss that the configuration requires has an invalid audience or issuer.
func (a *Authenticator) classify(err error, claims jwt.MapClaims) *Error {
	var e *Error
	_, hasAud := claims["aud"]
	_, hasIss := claims["iss"]
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && a.cfg.Audience != "" && !hasAud:
		return ErrBadAudience
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && a.cfg.Issuer != "" && !hasIss:
		return ErrBadIssuer
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return ErrBadSignature
	case errors.Is(err, jwt.ErrTokenExpired):
		return ErrExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return ErrNotYetValid
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return ErrBadIssuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return ErrBadAudience
	}
	return unauthorized("Invalid token: " + err.Error())
}
