package broker

import "context"

type aliveKey struct{}

// WithAliveCheck returns a child of ctx carrying alive, a cheap probe of
// whether the pop's client is still there (the HTTP layer peeks its socket).
// A parked Pop calls it after every park, right before it would claim: false
// ends the pop with nothing claimed, so no message is leased to a client that
// disconnected (spec 3.6: "A client disconnect cancels the parked pop; nothing
// may stay claimed"). alive must not block.
func WithAliveCheck(ctx context.Context, alive func() bool) context.Context {
	return context.WithValue(ctx, aliveKey{}, alive)
}

// stillWanted reports whether a parked pop may go on: ctx not done and its
// liveness probe (if any) says the client is there.
func stillWanted(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	if alive, ok := ctx.Value(aliveKey{}).(func() bool); ok && !alive() {
		return false
	}
	return true
}
