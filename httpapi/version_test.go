package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/version"
)

// Without a Version in its Config the server reports the build's own
// (package version), the same `comb version` prints; never "dev".
func TestHealthReportsTheBuildVersion(t *testing.T) {
	ts := startServer(t, newFake(), Config{})
	r := ts.do("GET", "/health", "")
	require.Equal(t, 200, r.status, "%s", r.body)
	got := r.json(t).(map[string]any)["version"]
	require.Equal(t, version.Read().Short(), got)
	require.NotEqual(t, "dev", got)
}
