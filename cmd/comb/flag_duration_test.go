package main

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMillisTakesQueenMillisecondsOrADuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"2000", 2 * time.Second, true}, // Queen's RETENTION_INTERVAL=2000 of its retention tests
		{"300000", 5 * time.Minute, true},
		{" 60000 ", time.Minute, true},
		{"1500ms", 1500 * time.Millisecond, true},
		{"1m30s", 90 * time.Second, true},
		{"0", 0, false},
		{"-5", 0, false},
		{"-1s", 0, false},
		{"soon", 0, false},
		{"", 0, false},
		{"999999999999", 0, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			m := millis(0)
			err := m.Set(c.in)
			if !c.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, m.d)
		})
	}
}

// RETENTION_INTERVAL and EVICTION_INTERVAL are read as Queen reads them; the
// flags win over them like every other serve flag.
func TestRetentionAndEvictionIntervalsFromTheEnvironment(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	ret, ev := millis(5*time.Minute), millis(time.Minute)
	fs.Var(&ret, "retention-interval", "")
	fs.Var(&ev, "eviction-interval", "")
	require.NoError(t, fs.Parse([]string{"--eviction-interval", "3s"}))
	env := map[string]string{"RETENTION_INTERVAL": "2000", "EVICTION_INTERVAL": "1000"}
	require.NoError(t, applyEnv(fs, func(k string) string { return env[k] }))
	require.Equal(t, 2*time.Second, ret.d)
	require.Equal(t, 3*time.Second, ev.d, "the flag wins")

	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Var(&ret, "retention-interval", "")
	require.ErrorContains(t, applyEnv(fs, func(k string) string {
		return map[string]string{"RETENTION_INTERVAL": "0"}[k]
	}), "RETENTION_INTERVAL")
}

// FuzzMillis: any text either sets a positive interval or is refused; never
// a panic, never zero or negative.
func FuzzMillis(f *testing.F) {
	for _, s := range []string{"2000", "1500ms", "1m30s", "0", "-1", "", "9223372036854775807", "1e3", "ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := millis(time.Second)
		if err := m.Set(s); err == nil && m.d <= 0 {
			t.Fatalf("%q set %v", s, m.d)
		}
	})
}
