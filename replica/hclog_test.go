package replica

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

func hcLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "not JSON: %q", line)
		out = append(out, m)
	}
	return out
}

// TestHCLoggerWritesZerologJSON: raft's lines come out as comb's JSON lines,
// with the logger's name as component and raft's arguments as fields.
func TestHCLoggerWritesZerologJSON(t *testing.T) {
	var buf bytes.Buffer
	l := NewHCLogger(zerolog.New(&buf).Level(zerolog.InfoLevel)).Named("transport").With("node", "n1")
	l.Info("entering follower state", "follower", hclog.Fmt("%s", "n2"), "term", uint64(7), "err", errors.New("boom"), "wait", 250*time.Millisecond)
	l.Debug("not written at info")
	lines := hcLines(t, &buf)
	require.Len(t, lines, 1)
	require.Equal(t, "info", lines[0]["level"])
	require.Equal(t, "entering follower state", lines[0]["message"])
	require.Equal(t, "raft.transport", lines[0]["component"])
	require.Equal(t, "n1", lines[0]["node"])
	require.Equal(t, float64(7), lines[0]["term"])
	require.Equal(t, "boom", lines[0]["err"])
	require.Equal(t, "250ms", lines[0]["wait"])
	require.Equal(t, "n2", lines[0]["follower"])
	require.True(t, l.IsInfo())
	require.False(t, l.IsDebug())
	require.Equal(t, hclog.Info, l.GetLevel())
}

// TestHCLoggerRateLimitsRoutineFailures: a heartbeat failure to a down peer
// is a warning, written once per peer and window, and the next one written
// says how many were dropped.
func TestHCLoggerRateLimitsRoutineFailures(t *testing.T) {
	var buf bytes.Buffer
	l := NewHCLogger(zerolog.New(&buf).Level(zerolog.InfoLevel))
	for range 5 {
		l.Error("failed to heartbeat to", "peer", "127.0.0.1:7002", "error", "connection refused")
	}
	l.Error("failed to heartbeat to", "peer", "127.0.0.1:7003", "error", "connection refused")
	l.Error("failed to take snapshot", "error", "disk")
	lines := hcLines(t, &buf)
	require.Len(t, lines, 3)
	require.Equal(t, "warn", lines[0]["level"])
	require.Equal(t, "127.0.0.1:7002", lines[0]["peer"])
	require.Equal(t, "127.0.0.1:7003", lines[1]["peer"])
	require.Equal(t, "error", lines[2]["level"], "a failure that is not routine keeps its level")

	r := &routineLimiter{last: map[string]routineState{}}
	t0 := time.Unix(1000, 0)
	ok, n := r.admit("k", t0)
	require.True(t, ok)
	require.Equal(t, 0, n)
	for i := range 3 {
		ok, _ = r.admit("k", t0.Add(time.Duration(i+1)*time.Second))
		require.False(t, ok)
	}
	ok, n = r.admit("k", t0.Add(routineEvery))
	require.True(t, ok)
	require.Equal(t, 3, n, "the line after the window counts the dropped ones")
}
