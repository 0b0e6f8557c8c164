package broker

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/seal"
)

const (
	keyA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	keyB = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100"
)

func keyring(t *testing.T, cur string, prev ...string) *seal.Keyring {
	t.Helper()
	r, err := seal.ParseKeyring(cur, prev)
	require.NoError(t, err)
	return r
}

// openKeyed opens dir with the given keys (nil: none).
func openKeyed(t *testing.T, dir string, keys *seal.Keyring) *Broker {
	t.Helper()
	b, err := Open(Config{DataDir: dir, Sync: "never", Logger: zerolog.Nop(), WakeTick: time.Millisecond, Keys: keys})
	require.NoError(t, err)
	return b
}

// filesHolding lists the files under dir whose bytes contain marker.
func filesHolding(t *testing.T, dir, marker string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(marker)) {
			out = append(out, strings.TrimPrefix(path, dir))
		}
		return nil
	}))
	return out
}

func configureEncrypted(t *testing.T, b *Broker, queue string, on bool) {
	t.Helper()
	var o QueueOptions
	o.EncryptionEnabled = on
	o.LeaseTime, o.RetryLimit = 60, 3
	_, err := b.Configure(ConfigureRequest{Queue: queue, Options: o})
	require.NoError(t, err)
}

func popAll(t *testing.T, b *Broker, queue, group string) PopResult {
	t.Helper()
	res, err := b.Pop(t.Context(), PopRequest{Queue: queue, Group: group, Batch: 100, Partitions: 10})
	require.NoError(t, err)
	t.Cleanup(res.Release)
	return res
}

// issue 11: an encrypted queue's payload appears in no file of the data directory (segments,
// dedup, indexes, DLQ, the cursor journal's transaction redo records), and every read path
// hands back the plaintext, also after a restart with the same key.
func TestEncryptedPayloadNeverOnDisk(t *testing.T) {
	dir := t.TempDir()
	keys := keyring(t, keyA)
	b := openKeyed(t, dir, keys)
	configureEncrypted(t, b, "enc", true)
	configureEncrypted(t, b, "plain", false)
	secret, plainMarker := "card-4111-secret", "visible-marker"

	_, err := b.Push([]PushItem{
		{Queue: "enc", Partition: "p", TransactionID: "push-1", Payload: []byte(`{"card":"` + secret + `-1"}`)},
		{Queue: "plain", Partition: "p", TransactionID: "plain-1", Payload: []byte(`{"m":"` + plainMarker + `"}`)},
	})
	require.NoError(t, err)
	tx, err := b.Transaction([]TxOp{{Type: "push", Push: PushItem{Queue: "enc", Partition: "p", TransactionID: "tx-1",
		Payload: []byte(`{"card":"` + secret + `-2"}`)}}})
	require.NoError(t, err)
	require.True(t, tx.Success)

	res := popAll(t, b, "enc", "")
	require.Len(t, res.Messages, 2)
	require.Equal(t, `{"card":"`+secret+`-1"}`, string(res.Messages[0].Payload))
	require.Equal(t, `{"card":"`+secret+`-2"}`, string(res.Messages[1].Payload))
	require.Empty(t, res.Messages[0].PayloadError)

	// Dead-letter the first one (a transaction's failed ack goes straight to the DLQ, spec 5.2).
	m := res.Messages[0]
	dl, err := b.Transaction([]TxOp{{Type: "ack", Ack: AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID,
		LeaseID: res.LeaseID, Status: "failed", Error: "boom"}}})
	require.NoError(t, err)
	require.True(t, dl.Success, dl.Error)
	entries, _, err := listDLQ(b, dlqFilter{Queue: "enc"})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, `{"card":"`+secret+`-1"}`, string(entries[0].Payload), "DLQ reads decrypt (spec 11 #41)")
	st := b.View().Counters()
	require.Equal(t, uint64(2), st.PayloadsSealed)
	require.Equal(t, uint64(0), st.PayloadsStoredPlain)
	require.NoError(t, b.Close())

	require.Empty(t, filesHolding(t, dir, secret), "the encrypted queue's payload is in no file")
	require.NotEmpty(t, filesHolding(t, dir, plainMarker), "the scan does find plain payloads")

	b = openKeyed(t, dir, keys)
	defer b.Close()
	late := popAll(t, b, "enc", "late")
	require.Len(t, late.Messages, 2)
	require.Equal(t, `{"card":"`+secret+`-1"}`, string(late.Messages[0].Payload), "decrypts after a restart")
}

// issue 11: a wrong or missing key never serves ciphertext as the payload; a rotated key ring
// (new key + the old one for reading) reads what the old key sealed and seals with the new one.
func TestEncryptedPayloadKeyChanges(t *testing.T) {
	dir := t.TempDir()
	b := openKeyed(t, dir, keyring(t, keyA))
	configureEncrypted(t, b, "enc", true)
	_, err := b.Push([]PushItem{{Queue: "enc", TransactionID: "a", Payload: []byte(`{"v":"a"}`)}})
	require.NoError(t, err)
	require.NoError(t, b.Close())

	for name, keys := range map[string]*seal.Keyring{"no key": nil, "wrong key": keyring(t, keyB)} {
		b = openKeyed(t, dir, keys)
		res := popAll(t, b, "enc", "g-"+strings.ReplaceAll(name, " ", "-"))
		require.Len(t, res.Messages, 1, name)
		require.Nil(t, res.Messages[0].Payload, name)
		require.Contains(t, res.Messages[0].PayloadError, "sealed with a key this broker does not hold", name)
		require.Equal(t, uint64(1), b.View().Counters().PayloadOpenFailures, name)
		require.NoError(t, b.Close())
	}

	b = openKeyed(t, dir, keyring(t, keyB, keyA))
	res := popAll(t, b, "enc", "rotated")
	require.Equal(t, `{"v":"a"}`, string(res.Messages[0].Payload), "the previous key opens old payloads")
	_, err = b.Push([]PushItem{{Queue: "enc", TransactionID: "b", Payload: []byte(`{"v":"b"}`)}})
	require.NoError(t, err)
	require.NoError(t, b.Close())

	b = openKeyed(t, dir, keyring(t, keyB))
	defer b.Close()
	res = popAll(t, b, "enc", "new-only")
	require.Len(t, res.Messages, 2)
	require.NotEmpty(t, res.Messages[0].PayloadError, "sealed by the retired key")
	require.Equal(t, `{"v":"b"}`, string(res.Messages[1].Payload), "sealed by the current key")
}

// spec 9.2: without a key an encryptionEnabled queue stores plaintext, warned and counted;
// switching encryption off later keeps the sealed payloads readable.
func TestEncryptionWithoutKeyAndSwitchedOff(t *testing.T) {
	dir := t.TempDir()
	b := openKeyed(t, dir, nil)
	configureEncrypted(t, b, "enc", true)
	_, err := b.Push([]PushItem{{Queue: "enc", TransactionID: "a", Payload: []byte(`{"v":"plain-without-key"}`)}})
	require.NoError(t, err)
	require.Equal(t, uint64(1), b.View().Counters().PayloadsStoredPlain)
	require.NoError(t, b.Close())
	require.NotEmpty(t, filesHolding(t, dir, "plain-without-key"))

	b = openKeyed(t, dir, keyring(t, keyA))
	defer b.Close()
	_, err = b.Push([]PushItem{{Queue: "enc", TransactionID: "b", Payload: []byte(`{"v":"sealed"}`)}})
	require.NoError(t, err)
	configureEncrypted(t, b, "enc", false)
	_, err = b.Push([]PushItem{{Queue: "enc", TransactionID: "c", Payload: nil}})
	require.NoError(t, err)
	res := popAll(t, b, "enc", "")
	require.Equal(t, []string{`{"v":"plain-without-key"}`, `{"v":"sealed"}`, `null`},
		[]string{string(res.Messages[0].Payload), string(res.Messages[1].Payload), string(res.Messages[2].Payload)})
}

// A transaction stopped after its commit point (the redo record is durable, nothing appended)
// is finished at the next Open from the journal: the journal held only the sealed payload, and
// the recovered message decrypts.
func TestEncryptedTransactionRecoveredFromRedo(t *testing.T) {
	dir := t.TempDir()
	keys := keyring(t, keyA)
	b := openKeyed(t, dir, keys)
	configureEncrypted(t, b, "enc", true)
	b.hooks.afterTxCommitPoint = func() error { return errTxInjected }
	_, err := b.Transaction([]TxOp{{Type: "push", Push: PushItem{Queue: "enc", TransactionID: "t",
		Payload: []byte(`{"pin":"redo-secret-1234"}`)}}})
	require.ErrorIs(t, err, errTxInjected)
	require.Empty(t, filesHolding(t, dir, "redo-secret-1234"), "the redo record in the journal is sealed")
	require.NoError(t, b.Close())

	b = openKeyed(t, dir, keys)
	defer b.Close()
	res := popAll(t, b, "enc", "")
	require.Len(t, res.Messages, 1)
	require.Equal(t, `{"pin":"redo-secret-1234"}`, string(res.Messages[0].Payload))
	require.Empty(t, filesHolding(t, dir, "redo-secret-1234"))
}

// A restart without the key names the encrypted queues at Open, once each.
func TestOpenWarnsEncryptedQueuesWithoutKey(t *testing.T) {
	dir := t.TempDir()
	b := openKeyed(t, dir, keyring(t, keyA))
	configureEncrypted(t, b, "enc", true)
	configureEncrypted(t, b, "plain", false)
	require.NoError(t, b.Close())

	var logs bytes.Buffer
	b, err := Open(Config{DataDir: dir, Sync: "never", Logger: zerolog.New(&logs), WakeTick: time.Millisecond})
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, 1, strings.Count(logs.String(), "no QUEEN_ENCRYPTION_KEY"), logs.String())
	require.Contains(t, logs.String(), `"queue":"enc"`)
	_, err = b.Push([]PushItem{{Queue: "enc", Payload: []byte("1")}})
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(logs.String(), "no QUEEN_ENCRYPTION_KEY"), "not warned again on the first push")
}
