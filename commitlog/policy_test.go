package commitlog

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The --sync names round-trip; an unknown one is ErrBadPolicy.
func TestParseSyncPolicy(t *testing.T) {
	for s, want := range map[string]SyncPolicy{"always": SyncAlways, "Interval": SyncInterval, " never ": SyncNever} {
		p, err := ParseSyncPolicy(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, p, s)
	}
	for p, want := range map[SyncPolicy]string{SyncAlways: "always", SyncInterval: "interval", SyncNever: "never", 7: "policy(7)"} {
		assert.Equal(t, want, p.String())
	}
	_, err := ParseSyncPolicy("sometimes")
	assert.ErrorIs(t, err, ErrBadPolicy)
}
