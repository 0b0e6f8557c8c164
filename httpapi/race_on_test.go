//go:build race

package httpapi

// raceDetector: the race detector is on. sync.Pool then drops a share of its Puts on purpose,
// so a pooled path's allocation count is not its count in a normal build.
const raceDetector = true
