package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// unitDuration is a flag.Value for a duration given the way Queen's environment gives
// one, a bare number of unit (RETENTION_INTERVAL=2000 milliseconds, JWT_CLOCK_SKEW=30
// seconds), or as a Go duration (2s, 1m30s). A bare number is at most a day; positive
// refuses zero. One type for every such flag so that they all read text alike.
type unitDuration struct {
	d        time.Duration
	unit     time.Duration
	positive bool
}

// millis is an interval flag in Queen's milliseconds that must be positive
// (RETENTION_INTERVAL, EVICTION_INTERVAL).
func millis(d time.Duration) unitDuration {
	return unitDuration{d: d, unit: time.Millisecond, positive: true}
}

func (u *unitDuration) String() string { return u.d.String() }

func (u *unitDuration) Set(text string) error {
	v := strings.TrimSpace(text)
	d, err := time.ParseDuration(v)
	if n, nerr := strconv.ParseInt(v, 10, 64); nerr == nil {
		if n > int64(24*time.Hour/u.unit) {
			return fmt.Errorf("%q: at most a day in %s", text, unitName(u.unit))
		}
		d, err = time.Duration(n)*u.unit, nil
	}
	switch {
	case err != nil:
		return fmt.Errorf("%q: want a number of %s or a duration like 30s", text, unitName(u.unit))
	case d < 0 || (u.positive && d == 0):
		if u.positive {
			return fmt.Errorf("%q: must be positive", text)
		}
		return fmt.Errorf("%q: must not be negative", text)
	}
	u.d = d
	return nil
}

func unitName(u time.Duration) string {
	switch u {
	case time.Millisecond:
		return "milliseconds"
	case time.Second:
		return "seconds"
	}
	return u.String()
}
