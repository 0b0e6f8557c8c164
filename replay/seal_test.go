package replay

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/seal"
)

// Replay from a data directory whose queue is encrypted at rest (issue 11): with the server's
// keys the target receives the plaintext payloads; without them the replay stops with an error
// that says which key is missing, and pushes nothing in its place.
func TestReplayEncryptedQueue(t *testing.T) {
	keys, err := seal.ParseKeyring("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", nil)
	require.NoError(t, err)
	dir := t.TempDir()
	b, err := broker.Open(broker.Config{DataDir: dir, Sync: "never", Logger: zerolog.Nop(), Keys: keys})
	require.NoError(t, err)
	var o broker.QueueOptions
	o.EncryptionEnabled = true
	_, err = b.Configure(broker.ConfigureRequest{Queue: "enc", Options: o})
	require.NoError(t, err)
	_, err = b.Push([]broker.PushItem{{Queue: "enc", Partition: "p", TransactionID: "t1", Payload: []byte(`{"card":"4111"}`)}})
	require.NoError(t, err)
	require.NoError(t, b.Close())

	target := newFakeTarget()
	srv := httptest.NewServer(target)
	defer srv.Close()
	_, err = Run(context.Background(), Options{Target: srv.URL, DataDir: dir})
	require.ErrorIs(t, err, seal.ErrNoKey)
	require.ErrorContains(t, err, "QUEEN_ENCRYPTION_KEY")
	assert.Empty(t, target.order["enc/p"])

	st, err := Run(context.Background(), Options{Target: srv.URL, DataDir: dir, Keys: keys})
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.Pushed)
	assert.Equal(t, map[string]any{"card": "4111"}, target.lastBody[0]["payload"])
}
