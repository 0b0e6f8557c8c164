package cursor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSubscription(t *testing.T) {
	now := time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC).UnixMicro()
	ts := time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC).UnixMicro()
	cases := []struct {
		name, mode, from string
		want             Subscription
	}{
		{"spec 3.8: the default is all", "", "", Subscription{Mode: SubAll, CreatedAtMicros: now}},
		{"spec 3.8: subscriptionMode=all", "all", "", Subscription{Mode: SubAll, CreatedAtMicros: now}},
		{"seed 000: subscriptionMode=new starts at the current end", "new", "", Subscription{Mode: SubNew, TimestampMicros: now, CreatedAtMicros: now}},
		{"spec 3.8: new-only is new", "new-only", "", Subscription{Mode: SubNew, TimestampMicros: now, CreatedAtMicros: now}},
		{"spec 3.8: an unknown mode is all", "latest", "", Subscription{Mode: SubAll, CreatedAtMicros: now}},
		{"seed 000: subscriptionFrom=now is new", "", "now", Subscription{Mode: SubNew, TimestampMicros: now, CreatedAtMicros: now}},
		{"spec 3.8: from wins over mode", "new", "2026-07-30T08:00:00Z", Subscription{Mode: SubTimestamp, TimestampMicros: ts, CreatedAtMicros: now}},
		{"spec 3.8: from=now wins over mode=all", "all", "now", Subscription{Mode: SubNew, TimestampMicros: now, CreatedAtMicros: now}},
		{"spec 0.4: ISO 8601 with fractional seconds", "", "2026-07-30T08:00:00.000001Z", Subscription{Mode: SubTimestamp, TimestampMicros: ts + 1, CreatedAtMicros: now}},
		{"spec 0.4: ISO 8601 with an offset", "", "2026-07-30T10:00:00+02:00", Subscription{Mode: SubTimestamp, TimestampMicros: ts, CreatedAtMicros: now}},
		{"ISO 8601 without a zone means UTC", "", "2026-07-30T08:00:00", Subscription{Mode: SubTimestamp, TimestampMicros: ts, CreatedAtMicros: now}},
		{"ISO 8601 without a zone, with fractions", "", "2026-07-30T08:00:00.5", Subscription{Mode: SubTimestamp, TimestampMicros: ts + 500_000, CreatedAtMicros: now}},
		{"spec 7.1: the epoch replays everything", "", "1970-01-01T00:00:00Z", Subscription{Mode: SubTimestamp, CreatedAtMicros: now}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseSubscription(c.mode, c.from, now)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
	for _, bad := range []string{"yesterday", "2026-13-01T00:00:00Z", "NOW", "1722330000"} {
		t.Run("spec 3.8: unparsable subscriptionFrom is an error: "+bad, func(t *testing.T) {
			_, err := ParseSubscription("all", bad, now)
			assert.ErrorIs(t, err, ErrBadSubscriptionFrom)
		})
	}
}

// fakePartition: offsets first..next-1 in segments starting at the given
// offsets with the given timestamps (ascending).
type fakePartition struct {
	first, next uint64
	segStart    []uint64
	segTime     []int64
}

func (p fakePartition) FirstOffset() uint64 { return p.first }
func (p fakePartition) NextOffset() uint64  { return p.next }
func (p fakePartition) OffsetAtOrAfterTime(ts int64) uint64 {
	for i, t := range p.segTime {
		if t >= ts && p.segStart[i] >= p.first {
			return p.segStart[i]
		}
	}
	return p.next
}

func TestStartCursor(t *testing.T) {
	// Offsets 5..20 retained (1..4 deleted by retention); segments start at
	// 1 (t=100), 5 (t=200), 11 (t=300), 16 (t=400).
	p := fakePartition{first: 5, next: 21, segStart: []uint64{1, 5, 11, 16}, segTime: []int64{100, 200, 300, 400}}
	empty := fakePartition{first: 1, next: 1}
	cases := []struct {
		name         string
		sub          Subscription
		p            PartitionView
		firstContact bool
		want         uint64
	}{
		{"seed 000: all starts at the oldest retained offset", Subscription{Mode: SubAll}, p, true, 4},
		{"seed 000: all on an empty partition", Subscription{Mode: SubAll}, empty, true, 0},
		{"seed 000: new starts at the partition's current end", Subscription{Mode: SubNew, TimestampMicros: 350}, p, true, 20},
		{"seed 000: a partition created later is seeded from the stored timestamp", Subscription{Mode: SubNew, TimestampMicros: 350}, p, false, 15},
		{"seed 000: a new group receives everything pushed to a partition born after it subscribed", Subscription{Mode: SubNew, TimestampMicros: 50}, p, false, 4},
		{"seed 000: timestamp lands just before the first segment at or after it", Subscription{Mode: SubTimestamp, TimestampMicros: 250}, p, true, 10},
		{"spec 11 #10: a segment exactly at the timestamp is included", Subscription{Mode: SubTimestamp, TimestampMicros: 300}, p, true, 10},
		{"seed 000: timestamp with nothing that recent is the current end", Subscription{Mode: SubTimestamp, TimestampMicros: 999}, p, true, 20},
		{"timestamp older than retention starts at the oldest retained offset", Subscription{Mode: SubTimestamp, TimestampMicros: 0}, p, false, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, StartCursor(c.sub, c.p, c.firstContact))
		})
	}
}
