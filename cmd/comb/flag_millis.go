package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// millis is a flag.Value for an interval given the way Queen's environment
// gives one, a bare number of milliseconds (RETENTION_INTERVAL=2000), or as
// a Go duration (2s, 1m30s). It must be positive.
type millis time.Duration

func (m *millis) String() string { return time.Duration(*m).String() }

func (m *millis) Set(text string) error {
	t := strings.TrimSpace(text)
	d, err := time.ParseDuration(t)
	if n, nerr := strconv.ParseInt(t, 10, 64); nerr == nil {
		if n > int64(24*time.Hour/time.Millisecond) {
			return fmt.Errorf("interval %q: at most a day in milliseconds", text)
		}
		d, err = time.Duration(n)*time.Millisecond, nil
	}
	if err != nil {
		return fmt.Errorf("interval %q: want milliseconds (2000) or a duration (2s)", text)
	}
	if d <= 0 {
		return fmt.Errorf("interval %q: must be positive", text)
	}
	*m = millis(d)
	return nil
}
