package bench

import "errors"

// Sentinels; callers match them with errors.Is. Every error returned by this package wraps one
// of these or an error from a driver's client library, with the operation as context.
var (
	// ErrConfig: a flag value is out of range or the combination makes no sense.
	ErrConfig = errors.New("bench: invalid configuration")
	// ErrHTTPStatus: the server answered with a status the spec does not allow for the route.
	ErrHTTPStatus = errors.New("bench: unexpected HTTP status")
	// ErrBadResponse: the body of a 2xx answer could not be parsed as the spec's shape.
	ErrBadResponse = errors.New("bench: malformed response")
	// ErrNoServerProcess: no local process listens on the target port (RSS/CPU unavailable).
	ErrNoServerProcess = errors.New("bench: no local server process found")
)
