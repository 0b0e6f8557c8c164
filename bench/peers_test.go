package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A binary without bench/peers refuses the peers' drivers with ErrConfig and says which
// binary has them; a registered driver is what NewDriver builds (issue 26).
func TestNewDriverBuildsOnlyRegisteredPeers(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Driver = "fake-peer"
	_, err := NewDriver(cfg, 1)
	require.ErrorIs(t, err, ErrConfig)

	cfg.Driver = DriverRedis
	peersMu.RLock()
	_, linked := peers[DriverRedis]
	peersMu.RUnlock()
	require.False(t, linked, "bench's tests link no peer")
	_, err = NewDriver(cfg, 1)
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "bin/comb-bench")

	want := &HTTPDriver{}
	RegisterDriver("fake-peer", func(c Config, conns int) (Driver, error) {
		assert.Equal(t, 3, conns)
		return want, nil
	})
	t.Cleanup(func() {
		peersMu.Lock()
		delete(peers, "fake-peer")
		peersMu.Unlock()
	})
	cfg.Driver = "fake-peer"
	got, err := NewDriver(cfg, 3)
	require.NoError(t, err)
	assert.Same(t, want, got)
}
