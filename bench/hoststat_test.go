package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLoadAvg(t *testing.T) {
	got, err := parseLoadAvg([]byte("0.81 1.52 2.94 1/87 11877\n"))
	require.NoError(t, err)
	assert.Equal(t, LoadAvg{One: 0.81, Five: 1.52, Fifteen: 2.94}, got)

	for _, bad := range []string{"", "0.81 1.52", "0.81 x 2.94 1/87 1"} {
		_, err := parseLoadAvg([]byte(bad))
		assert.ErrorIs(t, err, ErrBadResponse, "%q", bad)
	}
}

func TestParseHostBusyTicks(t *testing.T) {
	cases := []struct {
		name    string
		stat    string
		want    int64
		wantErr bool
	}{
		{"user+nice+system+irq+softirq+steal; idle, iowait and guest left out (proc(5))",
			"cpu  100 2 30 5000 400 6 7 8 50 0\ncpu0 50 1 15 2500 200 3 3 4 25 0\nintr 1\n", 100 + 2 + 30 + 6 + 7 + 8, false},
		{"no guest fields (before 2.6.24) is enough", "cpu  1 1 1 1 1 1 1 1\n", 6, false},
		{"no steal field (before 2.6.11) is refused", "cpu  1 1 1 1 1 1 1\n", 0, true},
		{"the aggregate line, not a per-core one, even when it comes later", "cpu0 9 9 9 9 9 9 9 9 9\ncpu  1 0 0 0 0 0 0 1 0 0\n", 2, false},
		{"no cpu line", "intr 1\n", 0, true},
		{"unreadable field", "cpu  1 x 1 1 1 1 1 1 1 1\n", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseHostBusyTicks([]byte(tc.stat))
			if tc.wantErr {
				require.ErrorIs(t, err, ErrBadResponse)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadHostCPUAndLoadAvgOnThisMachine(t *testing.T) {
	a, err := ReadHostCPU()
	require.NoError(t, err)
	assert.Positive(t, a.CPUTicks, "a booted machine has spent some CPU")
	_, err = ReadLoadAvg()
	require.NoError(t, err)
}
