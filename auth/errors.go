package auth

import "net/http"

// Error is a refused request: the HTTP status and Queen's message, sent as {"error": Message}
// (spec 9.1).
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// The refusals with fixed text (spec 9.1; Queen's auth_middleware.cpp and jwt_validator.cpp).
var (
	ErrNoToken          = &Error{http.StatusUnauthorized, "Authentication required"}
	ErrBadSignature     = &Error{http.StatusUnauthorized, "Invalid token signature"}
	ErrExpired          = &Error{http.StatusUnauthorized, "Token has expired"}
	ErrNotYetValid      = &Error{http.StatusUnauthorized, "Token is not valid yet"}
	ErrBadIssuer        = &Error{http.StatusUnauthorized, "Invalid token issuer"}
	ErrBadAudience      = &Error{http.StatusUnauthorized, "Invalid token audience"}
	ErrForbidden        = &Error{http.StatusForbidden, "Insufficient permissions"}
	ErrJWKSUnavailable  = &Error{http.StatusInternalServerError, "Failed to fetch JWKS"}
	errEmptyToken       = &Error{http.StatusUnauthorized, "Empty token"}
	errTokenTooLong     = &Error{http.StatusUnauthorized, "Invalid token: longer than 16 KiB"}
	errSubjectNotString = &Error{http.StatusUnauthorized, "Invalid token: sub must be a string"}
)

func unauthorized(msg string) *Error { return &Error{http.StatusUnauthorized, msg} }

// unknownKID is 401 "Unknown key ID: <kid>".
func unknownKID(kid string) *Error { return unauthorized("Unknown key ID: " + kid) }

// wrongAlgorithm is 401 "Token uses <alg>, expected <cfg>".
func wrongAlgorithm(alg, want string) *Error {
	return unauthorized("Token uses " + alg + ", expected " + want)
}
