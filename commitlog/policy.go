package commitlog

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadPolicy is wrapped by ParseSyncPolicy for a name it does not know.
var ErrBadPolicy = errors.New("commitlog: unknown sync policy")

// String returns "always", "interval" or "never" (the --sync names).
func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNever:
		return "never"
	}
	return fmt.Sprintf("policy(%d)", int(p))
}

// ParseSyncPolicy parses "always" | "interval" | "never" (case-insensitive,
// surrounding spaces ignored: broker Config.Sync, comb serve --sync).
//
// Errors: ErrBadPolicy, wrapped with the name.
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "always":
		return SyncAlways, nil
	case "interval":
		return SyncInterval, nil
	case "never":
		return SyncNever, nil
	}
	return 0, fmt.Errorf("sync policy %q: %w", s, ErrBadPolicy)
}
