package segment

import (
	"fmt"
	"strings"
	"time"
)

// SyncPolicy says when appended bytes are made durable (see Committer).
type SyncPolicy uint8

// Sync policies. What each promises after a crash is documented on Committer.
const (
	SyncAlways SyncPolicy = iota
	SyncInterval
	SyncNever
)

// String returns "always", "interval" or "never".
func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNever:
		return "never"
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// ParseSyncPolicy parses "always" | "interval" | "never" (case-insensitive);
// anything else returns an error wrapping ErrBadPolicy.
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "always", "":
		return SyncAlways, nil
	case "interval":
		return SyncInterval, nil
	case "never":
		return SyncNever, nil
	}
	return 0, fmt.Errorf("sync policy %q: %w", s, ErrBadPolicy)
}

var _ = time.Millisecond
