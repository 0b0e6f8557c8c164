package dump

import (
	"fmt"
	"time"
)

// formatMicros renders µs since the epoch as the API's createdAt (6 fractional digits, Z).
func formatMicros(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z")
}

// ParseTime accepts RFC 3339 / ISO 8601 (with or without fraction, "Z" or an offset),
// a date (2006-01-02), or an integer of µs since the epoch, and returns µs.
func ParseTime(s string) (int64, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMicro(), nil
		}
	}
	var us int64
	if _, err := fmt.Sscanf(s, "%d", &us); err == nil && fmt.Sprint(us) == s {
		return us, nil
	}
	return 0, fmt.Errorf("time %q: want RFC 3339 (2026-07-30T09:12:44Z), a date, or µs since the epoch", s)
}
