// Package clock is the time seam of the long-poll (issue 26, "half seams"): a Clock gives wall
// readings and timers from one source, so a test that drives the clock by hand drives both a
// pop's deadline and its backoff waits, and asserts exact instants instead of wall-clock bounds.
//
// System is the real clock. clocktest.Fake (package clock/clocktest, so the server links none
// of it) is its in-memory twin (as hashicorp/raft ships InmemTransport
// beside its network transport): time stands still until the test advances it, and advancing
// fires the timers that fall due, in order of their due time. Fake.Changed lets a test wait,
// on a channel, until the code under test has armed its next timer.
//
// It is a leaf: it imports only the standard library. It knows nothing of pops, leases or the
// broker.
package clock
