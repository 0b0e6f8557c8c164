package replay

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/seal"
)

const replayKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// sourceDir makes a data directory with queue "shop-bill" (namespace, task, non-default options)
// and one message, and a second queue "plain" with defaults. enc sets encryptionEnabled on
// shop-bill, sealed with the key.
func sourceDir(t *testing.T, enc bool) (string, *seal.Keyring) {
	t.Helper()
	keys, err := seal.ParseKeyring(replayKey, nil)
	require.NoError(t, err)
	dir := t.TempDir()
	b, err := broker.Open(broker.Config{DataDir: dir, Sync: "never", Logger: zerolog.Nop(), Keys: keys})
	require.NoError(t, err)
	o := broker.DefaultQueueOptions()
	o.LeaseTime, o.RetryLimit, o.DeadLetterQueue, o.DLQAfterMaxRetries, o.RetentionEnabled, o.RetentionSeconds = 77, 5, true, true, true, 3600
	o.EncryptionEnabled = enc
	_, err = b.Configure(broker.ConfigureRequest{Queue: "shop-bill", Namespace: "shop", Task: "bill", Options: o})
	require.NoError(t, err)
	_, err = b.Push([]broker.PushItem{
		{Queue: "shop-bill", Partition: "p", TransactionID: "t1", Payload: []byte(`{"card":"4111"}`)},
		{Queue: "plain", Partition: "p", TransactionID: "t2", Payload: []byte(`{"n":1}`)},
	})
	require.NoError(t, err)
	require.NoError(t, b.Close())
	return dir, keys
}

// Issue 25: each target queue is configured like its source queue, namespace, task and every
// option, before its messages are pushed.
func TestReplayCarriesQueueConfiguration(t *testing.T) {
	dir, _ := sourceDir(t, false)
	target := newFakeTarget()
	srv := httptest.NewServer(target)
	defer srv.Close()
	st, err := Run(context.Background(), Options{Target: srv.URL, DataDir: dir})
	require.NoError(t, err)
	assert.Equal(t, 2, st.Configured)
	assert.Equal(t, int64(2), st.Pushed)
	assert.Equal(t, map[string]any{"queue": "shop-bill", "namespace": "shop", "task": "bill", "options": map[string]any{
		"leaseTime": 77.0, "retryLimit": 5.0, "retryDelay": 1000.0, "maxSize": 0.0, "ttl": 3600.0, "priority": 0.0,
		"delayedProcessing": 0.0, "windowBuffer": 0.0, "minPopWaitTime": 0.0, "retentionSeconds": 3600.0,
		"completedRetentionSeconds": 0.0, "maxWaitTimeSeconds": 0.0, "retentionEnabled": true, "encryptionEnabled": false,
		"deadLetterQueue": true, "dlqAfterMaxRetries": true,
	}}, target.configured["shop-bill"])
	assert.Equal(t, "plain", target.configured["plain"]["namespace"], "an auto-created queue's labels (spec 1.3) are carried too")

	target = newFakeTarget()
	srv2 := httptest.NewServer(target)
	defer srv2.Close()
	st, err = Run(context.Background(), Options{Target: srv2.URL, DataDir: dir, NoConfig: true, Token: "tok"})
	require.NoError(t, err)
	assert.Zero(t, st.Configured)
	assert.Empty(t, target.configured, "--no-config")
	assert.Equal(t, int64(2), st.Pushed)
	for _, a := range target.auths {
		assert.Equal(t, "Bearer tok", a, "every request carries the token")
	}
}

// Issue 25: an encryptionEnabled queue's payloads are never pushed where they would be stored
// in plaintext, unless --allow-plaintext.
func TestReplayRefusesToStoreEncryptedPayloadsInPlaintext(t *testing.T) {
	dir, keys := sourceDir(t, true)
	cases := []struct {
		name     string
		target   *fakeTarget
		opts     Options
		wantErr  string
		pushed   int64
		configed int
	}{
		{"comb with a key seals them", &fakeTarget{}, Options{}, "", 2, 2},
		{"comb without a key", &fakeTarget{noKey: true}, Options{},
			`queue "shop-bill" has encryptionEnabled, and the target (comb) has no QUEEN_ENCRYPTION_KEY: the target would store encrypted payloads in plaintext; the queue was configured there, no message was pushed. Give the target a key (QUEEN_ENCRYPTION_KEY), or pass --allow-plaintext to store them in plaintext there`, 0, 2},
		{"a target that is not comb", &fakeTarget{server: "queen"}, Options{},
			`queue "shop-bill" has encryptionEnabled, and the target is not comb, and replay cannot tell whether it holds an encryption key: the target would store encrypted payloads in plaintext; the queue was configured there, no message was pushed. Give the target a key (QUEEN_ENCRYPTION_KEY), or pass --allow-plaintext to store them in plaintext there`, 0, 2},
		{"--no-config cannot tell", &fakeTarget{}, Options{NoConfig: true},
			`queue "shop-bill" has encryptionEnabled, and with --no-config replay does not learn whether the target queue is encrypted: the target would store encrypted payloads in plaintext. Give the target a key (QUEEN_ENCRYPTION_KEY), or pass --allow-plaintext to store them in plaintext there`, 0, 0},
		{"--allow-plaintext", &fakeTarget{noKey: true}, Options{AllowPlaintext: true}, "", 2, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.target.order, c.target.seen = map[string][]string{}, map[string]bool{}
			srv := httptest.NewServer(c.target)
			defer srv.Close()
			o := c.opts
			o.Target, o.DataDir, o.Keys = srv.URL, dir, keys
			st, err := Run(context.Background(), o)
			if c.wantErr != "" {
				require.ErrorIs(t, err, ErrPlaintextTarget)
				require.EqualError(t, err, c.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, c.pushed, st.Pushed)
			assert.Equal(t, c.configed, st.Configured)
			if c.pushed == 0 {
				assert.Empty(t, c.target.order, "nothing pushed")
			}
		})
	}
}

// A payload sealed while encryption was on, in a queue configured without it now, is refused
// too: its target queue would hold the plaintext.
func TestReplayRefusesASealedPayloadOfAQueueNoLongerEncrypted(t *testing.T) {
	dir, keys := sourceDir(t, true)
	b, err := broker.Open(broker.Config{DataDir: dir, Sync: "never", Logger: zerolog.Nop(), Keys: keys})
	require.NoError(t, err)
	_, err = b.Configure(broker.ConfigureRequest{Queue: "shop-bill", Options: broker.DefaultQueueOptions()})
	require.NoError(t, err)
	require.NoError(t, b.Close())
	target := newFakeTarget()
	srv := httptest.NewServer(target)
	defer srv.Close()
	_, err = Run(context.Background(), Options{Target: srv.URL, DataDir: dir, Queue: "shop-bill", Keys: keys})
	require.ErrorIs(t, err, ErrPlaintextTarget)
	require.ErrorContains(t, err, `an encrypted payload, and target queue "shop-bill" does not seal its payloads`)
	assert.Empty(t, target.order)
}

// A dump holds a sealed payload as a base64 string: replaying it would push that string.
func TestReplayRefusesASealedPayloadInADump(t *testing.T) {
	keys, err := seal.ParseKeyring(replayKey, nil)
	require.NoError(t, err)
	sealed, err := keys.Seal([]byte(`{"card":"4111"}`))
	require.NoError(t, err)
	line, err := json.Marshal(map[string]any{"type": "record", "queue": "q", "partition": "p", "offset": 1,
		"transactionId": "t1", "payloadBytes": len(sealed), "payload": base64.StdEncoding.EncodeToString(sealed)})
	require.NoError(t, err)
	f := filepath.Join(t.TempDir(), "d.jsonl")
	require.NoError(t, os.WriteFile(f, append(line, '\n'), 0o600))
	target := newFakeTarget()
	srv := httptest.NewServer(target)
	defer srv.Close()
	_, err = Run(context.Background(), Options{Target: srv.URL, DumpFile: f})
	require.ErrorIs(t, err, ErrBadDump)
	require.ErrorContains(t, err, "line 1: malformed dump line: an encrypted payload (encryptionEnabled), dumped sealed")
	assert.Empty(t, target.order)
}

func TestNotCarried(t *testing.T) {
	base := []string{
		"consumer-group cursors and leases: a group on the target starts as a new group does (its subscriptionMode)",
		"dead letters: list them with `comb dump --dlq --payload`",
		"message timestamps: createdAt on the target is the time of the replay",
		"traces, producerSub and retry counts",
	}
	assert.Equal(t, base, NotCarried(Options{DataDir: "d"}))
	assert.Equal(t, append(base, "queue configuration (a dump file holds none): configure the target queues first"), NotCarried(Options{DumpFile: "f"}))
	assert.Equal(t, append(base, "queue configuration (--no-config)"), NotCarried(Options{DataDir: "d", NoConfig: true}))
}
