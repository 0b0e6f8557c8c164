package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQueueExists(t *testing.T) {
	b := openKeyed(t, t.TempDir(), nil)
	defer b.Close()
	require.False(t, b.QueueExists("orders"))
	_, err := b.Push([]PushItem{{Queue: "orders", Payload: []byte(`{}`)}})
	require.NoError(t, err)
	require.True(t, b.QueueExists("orders"), "a push creates it")
	_, err = b.DeleteQueue("orders")
	require.NoError(t, err)
	require.False(t, b.QueueExists("orders"))
}

// Issue 25: configure reports when an encryptionEnabled queue's payloads will be stored in
// plaintext (no key), so the answer can say so and comb replay can refuse.
func TestConfigureReportsStoredPlain(t *testing.T) {
	enc := DefaultQueueOptions()
	enc.EncryptionEnabled = true
	for _, c := range []struct {
		name  string
		keyed bool
		opts  QueueOptions
		want  bool
	}{
		{"encrypted queue without a key", false, enc, true},
		{"encrypted queue with a key", true, enc, false},
		{"plain queue without a key", false, DefaultQueueOptions(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b *Broker
			if c.keyed {
				b = openKeyed(t, t.TempDir(), keyring(t, keyA))
			} else {
				b = openKeyed(t, t.TempDir(), nil)
			}
			defer b.Close()
			res, err := b.Configure(ConfigureRequest{Queue: "q", Options: c.opts})
			require.NoError(t, err)
			require.Equal(t, c.want, res.StoredPlain)
		})
	}
}
