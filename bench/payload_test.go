package bench

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewPayloadIsValidJSONOfExactSize(t *testing.T) {
	for _, size := range []int{2, 3, 33, MinTimedPayload, MinTimedPayload + 1, 200, 4096} {
		p := NewPayload(size)
		p.Stamp(1_764_374_400_123_456_789)
		b := p.Bytes()
		assert.Len(t, b, size, "size %d", size)
		assert.True(t, json.Valid(b), "size %d: %s", size, b)
		want := int64(0)
		if size >= MinTimedPayload {
			want = 1_764_374_400_123_456_789
		}
		assert.Equal(t, want, PayloadTime(b), "size %d", size)
	}
}

func TestStampOverwritesInPlace(t *testing.T) {
	p := NewPayload(100)
	p.Stamp(42)
	assert.Equal(t, int64(42), PayloadTime(p.Bytes()))
	assert.True(t, json.Valid(p.Bytes()), "a short time is space-padded, never zero-padded: %s", p.Bytes())
	p.Stamp(1_000_000_000_000_000_001)
	assert.Equal(t, int64(1_000_000_000_000_000_001), PayloadTime(p.Bytes()))
	p.Stamp(7)
	assert.Equal(t, int64(7), PayloadTime(p.Bytes()), "a shorter time clears the longer one's digits")
	assert.True(t, json.Valid(p.Bytes()))
	assert.Len(t, p.Bytes(), 100)
}

func TestPayloadTime(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want int64
	}{
		{"as sent", `{"t":                123,"pad":"xx"}`, 123},
		{"re-serialised with spaces (jsonb style)", `{"t": 1764374400000000000, "pad": "x"}`, 1764374400000000000},
		{"key order changed", `{"pad":"x","t":77}`, 77},
		{"no t field", `{"pad":"x"}`, 0},
		{"t not a number", `{"t":"soon"}`, 0},
		{"plain string payload", `"xxxx"`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, PayloadTime([]byte(tc.in)))
		})
	}
}

func TestNormalizeRejectsBadConfigs(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
	}{
		{"unknown workload", func(c *Config) { c.Workload = "spin" }},
		{"unknown driver", func(c *Config) { c.Driver = "kafka" }},
		{"zero batch", func(c *Config) { c.Batch = 0 }},
		{"zero duration", func(c *Config) { c.Duration = 0 }},
		{"negative rate", func(c *Config) { c.Rate = -1 }},
		{"e2e payload too small to carry the send time", func(c *Config) { c.Workload = WorkloadE2E; c.Size = 20 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mutate(&c)
			_, err := c.Normalize()
			require.ErrorIs(t, err, ErrConfig)
		})
	}
}

func TestNormalizeWorkloadDefaults(t *testing.T) {
	c := DefaultConfig()
	c.Workload = WorkloadLongPoll
	c.Concurrency = 50
	n, err := c.Normalize()
	require.NoError(t, err)
	assert.Equal(t, 50, n.Queues, "longpoll: one queue per parked consumer")
	assert.Equal(t, 1, n.Partitions)
	assert.Equal(t, 1000.0, n.Rate, "longpoll is open loop by default")
	assert.NotEmpty(t, n.RunID)

	c = DefaultConfig()
	c.Workload = WorkloadFanout
	n, err = c.Normalize()
	require.NoError(t, err)
	assert.Equal(t, 10, n.Groups, "fanout defaults to the issue's 10 groups")
	assert.Equal(t, []string{"bench-" + n.RunID + "-g0"}, n.groupNames()[:1])
}
