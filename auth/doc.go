// Package auth owns JWT authentication and role-based authorization as Queen configures them
// (spec 9.1, issue 11): the configuration (Queen's JWT_* environment, every value also a
// `comb serve` flag), the Authorization header, token verification with
// github.com/golang-jwt/jwt/v5 (HS256, RS256/RS384/RS512, EdDSA, or auto from the token's
// header), the JWKS cache (JWT_JWKS_URL: fetched at start, refreshed hourly and on an unknown
// `kid`, keys parsed by github.com/MicahParks/jwkset), the roles and the three access levels
// (admin ⊇ read-write ⊇ read-only), the public paths (JWT_SKIP_PATHS), and a bounded cache of
// verified tokens so that a request pays a map lookup, not a signature check.
//
// It must not know about routes, HTTP servers or messages: the HTTP layer (package httpapi)
// owns the table that gives every route its Level, reads the header, calls
// Authenticator.Check and answers the *Error it returns with Queen's exact body. The identity it
// returns (Identity.Subject, the token's `sub`) is what httpapi stamps as producerSub.
//
// Failures and their answers (spec 9.1; the messages are Queen's, byte for byte):
//
//	no Authorization header          401 Authentication required
//	bad signature                    401 Invalid token signature
//	exp passed (with the skew)       401 Token has expired
//	nbf or iat still ahead           401 Token is not valid yet
//	iss / aud not the configured one 401 Invalid token issuer / Invalid token audience
//	kid not in the JWKS              401 Unknown key ID: <kid>
//	alg not the configured one       401 Token uses <alg>, expected <cfg>
//	alg outside Queen's set (auto)   401 Unsupported algorithm: <alg>
//	anything else undecodable        401 Invalid token: <detail>
//	no role that reaches the level   403 Insufficient permissions
//	JWKS cannot be fetched           500 Failed to fetch JWKS
//
// A configuration that cannot verify any token (HS256 without a secret, RS256 or EdDSA with
// neither a public key nor a JWKS URL, an unparsable key) is refused by New, so the server
// does not start rather than answer 500 to every request.
package auth
