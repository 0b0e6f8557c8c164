package dump

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTime(t *testing.T) {
	cases := []struct {
		in   string
		want int64
	}{
		{"2026-07-30T09:00:00Z", 1_785_402_000_000_000},
		{"2026-07-30T09:00:00.000001Z", 1_785_402_000_000_001},
		{"2026-07-30T11:00:00+02:00", 1_785_402_000_000_000},
		{"2026-07-30", 1_785_369_600_000_000},
		{"1785402000000000", 1_785_402_000_000_000},
	}
	for _, tc := range cases {
		got, err := ParseTime(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	for _, bad := range []string{"", "yesterday", "12x", "2026-13-01"} {
		_, err := ParseTime(bad)
		assert.Error(t, err, bad)
	}
}
