//go:build !race

package httpapi

// raceDetector: see race_on_test.go.
const raceDetector = false
