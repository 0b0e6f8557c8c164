package cursor

import (
	"fmt"
	"time"
)

// SubMode is where a consumer group starts on a queue (spec 3.8).
type SubMode uint8

const (
	SubAll       SubMode = iota // the oldest retained offset: the whole backlog
	SubNew                      // the partition's current end (later partitions: from the stored timestamp)
	SubTimestamp                // just before the first segment written at or after TimestampMicros
)

// String gives the mode's wire name.
func (m SubMode) String() string {
	switch m {
	case SubAll:
		return "all"
	case SubNew:
		return "new"
	case SubTimestamp:
		return "timestamp"
	}
	return fmt.Sprintf("SubMode(%d)", uint8(m))
}

// Subscription is a consumer group's stored start position on one queue,
// decided once on first contact (seed 000 "Subscription modes are decided once").
type Subscription struct {
	Mode            SubMode
	TimestampMicros int64 // SubNew: the subscribe time; SubTimestamp: the requested time; SubAll: 0
	CreatedAtMicros int64 // when the record was stored
}

// timeLayouts are the ISO 8601 shapes accepted for subscriptionFrom. RFC 3339
// (with or without fractional seconds, Z or an offset) comes first; the zoneless
// shapes are read as UTC.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// ParseTimestamp parses an ISO 8601 timestamp (RFC 3339 with or without
// fractional seconds and with Z or an offset, or a date-time without zone meaning
// UTC) into µs since the Unix epoch. It returns ErrBadSubscriptionFrom wrapped
// when nothing matches.
func ParseTimestamp(s string) (int64, error) {
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("subscriptionFrom %q: %w", s, ErrBadSubscriptionFrom)
}

// ParseSubscription turns a first-contact request into the record to store
// (spec 3.8; seed 000 "Subscription modes are decided once"): `from` wins over
// `mode`; from "now" gives SubNew at nowMicros; an ISO 8601 from gives
// SubTimestamp; mode "new" or "new-only" gives SubNew at nowMicros; anything else
// gives SubAll. An unparsable from returns an error wrapping
// ErrBadSubscriptionFrom (spec 3.8 recommends 400 "invalid subscriptionFrom").
// The caller skips this for __QUEUE_MODE__, which always reads from the
// beginning (seed 000, "Queue mode always reads from the beginning").
func ParseSubscription(mode, from string, nowMicros int64) (Subscription, error) {
	switch {
	case from == "now":
		return Subscription{Mode: SubNew, TimestampMicros: nowMicros, CreatedAtMicros: nowMicros}, nil
	case from != "":
		ts, err := ParseTimestamp(from)
		if err != nil {
			return Subscription{}, err
		}
		return Subscription{Mode: SubTimestamp, TimestampMicros: ts, CreatedAtMicros: nowMicros}, nil
	case mode == "new" || mode == "new-only":
		return Subscription{Mode: SubNew, TimestampMicros: nowMicros, CreatedAtMicros: nowMicros}, nil
	default:
		return Subscription{Mode: SubAll, CreatedAtMicros: nowMicros}, nil
	}
}

// PartitionView is what seeding needs from a partition; *segment.Log satisfies it.
type PartitionView interface {
	FirstOffset() uint64                       // oldest retained offset; == NextOffset() when empty
	NextOffset() uint64                        // high-water mark + 1
	OffsetAtOrAfterTime(tsMicros int64) uint64 // first offset of the first segment at or after ts; NextOffset() when none
}

// StartCursor is the committed offset to seed for a (partition, group) that has
// no cursor yet (seed 000 table "Where the cursor starts"; spec 3.8):
//   - SubAll: FirstOffset()-1, so the whole retained backlog is read.
//   - SubNew with firstContact (the partition existed when the group
//     subscribed): NextOffset()-1, the current end.
//   - SubNew for a partition born later: OffsetAtOrAfterTime(subscribe time)-1,
//     so "a new group receives everything ever pushed to that new partition".
//   - SubTimestamp: OffsetAtOrAfterTime(ts)-1, the current end when nothing is
//     that recent (segment-granular replay).
//
// The result is never below FirstOffset()-1.
func StartCursor(sub Subscription, p PartitionView, firstContact bool) uint64 {
	floor := p.FirstOffset() - 1
	var c uint64
	switch {
	case sub.Mode == SubNew && firstContact:
		c = p.NextOffset() - 1
	case sub.Mode == SubNew || sub.Mode == SubTimestamp:
		c = p.OffsetAtOrAfterTime(sub.TimestampMicros) - 1
	default:
		c = floor
	}
	return max(c, floor)
}
