package bench

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimelineDueTimes(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		rate     float64
		batch    int
		interval time.Duration
	}{
		{"100k msg/s in batches of 100 is one request per 1 ms", 100_000, 100, time.Millisecond},
		{"1000 msg/s one at a time is one request per 1 ms", 1000, 1, time.Millisecond},
		{"3 msg/s is one request per 333.333333 ms", 3, 1, 333333333 * time.Nanosecond},
		{"a rate above 1e9 req/s still advances (1 ns)", 1e12, 1, time.Nanosecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := NewTimeline(start, tc.rate, tc.batch)
			assert.Equal(t, tc.interval, tl.Interval())
			for k := int64(0); k < 5; k++ {
				gotK, due := tl.Next()
				assert.Equal(t, k, gotK)
				assert.Equal(t, start.Add(time.Duration(k)*tc.interval), due)
			}
			// Due times do not depend on when a ticket is drawn: that is what keeps a slow
			// answer from hiding the latency of the sends it delayed.
			assert.Equal(t, start.Add(1000*tc.interval), tl.DueTime(1000))
		})
	}
}

func TestTimelineTicketsAreUniqueAcrossPushers(t *testing.T) {
	tl := NewTimeline(time.Unix(0, 0), 1000, 1)
	const workers, each = 8, 500
	got := make(chan int64, workers*each)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				k, _ := tl.Next()
				got <- k
			}
		}()
	}
	wg.Wait()
	close(got)
	seen := map[int64]bool{}
	for k := range got {
		require.False(t, seen[k], "ticket %d handed out twice", k)
		seen[k] = true
	}
	assert.Len(t, seen, workers*each)
	for k := int64(0); k < workers*each; k++ {
		assert.True(t, seen[k], "ticket %d missing", k)
	}
}

// Interval is the gap between two consecutive due times.
func (t *Timeline) Interval() time.Duration { return t.interval }
