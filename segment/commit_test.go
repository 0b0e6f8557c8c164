package segment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSyncPolicy(t *testing.T) {
	for s, want := range map[string]SyncPolicy{"always": SyncAlways, "Interval": SyncInterval, "never": SyncNever} {
		p, err := ParseSyncPolicy(s)
		require.NoError(t, err)
		assert.Equal(t, want, p)
		assert.Equal(t, want.String(), p.String())
	}
	_, err := ParseSyncPolicy("sometimes")
	assert.ErrorIs(t, err, ErrBadPolicy)
}
