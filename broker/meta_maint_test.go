package broker

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/combmq/comb/meta"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPushMaintenanceHoldsThenReleasesInPushOrder(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p", "before")
	st, err := e.b.SetPushMaintenance(true)
	require.NoError(t, err)
	assert.True(t, st.PushMaintenance)

	res := e.push("q", "p", "m1", "m2")
	e.push("q", "other", "m3")
	for _, r := range res {
		assert.Equal(t, PushBuffered, r.Status, "a push during maintenance answers buffered")
		assert.Equal(t, "q", r.Queue)
		assert.Equal(t, "p", r.Partition)
		assert.Empty(t, r.MessageID)
	}
	assert.Equal(t, "m1", res[0].TransactionID)
	assert.Equal(t, int64(3), e.b.Maintenance().BufferedMessages)

	got := e.pop(PopRequest{Queue: "q", Batch: 10, Partitions: 5, AutoAck: true})
	assert.Equal(t, []string{"before"}, txids(got), "held messages are invisible to pops")

	st, err = e.b.SetPushMaintenance(false)
	require.NoError(t, err)
	assert.False(t, st.PushMaintenance)
	assert.Equal(t, int64(0), st.BufferedMessages)
	got = e.pop(PopRequest{Queue: "q", Partition: "p", Batch: 10, AutoAck: true})
	assert.Equal(t, []string{"m1", "m2"}, txids(got), "released in push order, once")
	got = e.pop(PopRequest{Queue: "q", Batch: 10, AutoAck: true})
	assert.Equal(t, []string{"m3"}, txids(got))
	assert.Empty(t, e.pop(PopRequest{Queue: "q", Batch: 10, AutoAck: true}).Messages)
}

func TestPushMaintenanceBufferedItemCarriesOnlyTheClientsTransactionID(t *testing.T) {
	e := newEnv(t)
	_, err := e.b.SetPushMaintenance(true)
	require.NoError(t, err)
	res, err := e.b.Push([]PushItem{{Queue: "q", Payload: []byte(`1`)}})
	require.NoError(t, err)
	assert.Equal(t, PushResult{Status: PushBuffered, Queue: "q", Partition: DefaultPartition}, res[0])
}

func TestPushMaintenanceRetryOfABufferedPushIsADuplicate(t *testing.T) {
	e := newEnv(t)
	_, err := e.b.SetPushMaintenance(true)
	require.NoError(t, err)
	e.push("q", "p", "a")
	dup := e.push("q", "p", "a")
	assert.Equal(t, PushDuplicate, dup[0].Status)
	assert.Equal(t, int64(1), e.b.Maintenance().BufferedMessages)
}

func TestPopMaintenanceAnswersEmptyAtOnce(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p", "a")
	st, err := e.b.SetPopMaintenance(true)
	require.NoError(t, err)
	assert.True(t, st.PopMaintenance)
	cases := []struct {
		name string
		req  PopRequest
	}{
		{"wildcard pop", PopRequest{Queue: "q"}},
		{"targeted pop", PopRequest{Queue: "q", Partition: "p"}},
		{"discovery pop", PopRequest{Namespace: "x"}},
		{"long-poll answers at once", PopRequest{Queue: "q", Wait: true, Timeout: 1 << 40}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := e.b.Pop(context.Background(), c.req)
			require.NoError(t, err)
			assert.Empty(t, res.Messages)
		})
	}
	_, err = e.b.SetPopMaintenance(false)
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, txids(e.pop(PopRequest{Queue: "q", AutoAck: true})))
}

func TestMaintenanceModesSurviveRestart(t *testing.T) {
	cases := []struct {
		name  string
		crash bool
	}{
		{"clean restart", false},
		{"crash restart (no clean marker)", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.push("q", "p", "seen")
			_, err := e.b.SetPushMaintenance(true)
			require.NoError(t, err)
			_, err = e.b.SetPopMaintenance(true)
			require.NoError(t, err)
			e.push("q", "p", "held1", "held2")
			e.push("q", "p", "held3")
			require.NoError(t, e.b.Close())
			e.b = nil
			if c.crash {
				require.NoError(t, os.Remove(filepath.Join(e.dir, "meta", cleanFileName)))
			}
			e.open()

			st := e.b.Maintenance()
			assert.True(t, st.PushMaintenance)
			assert.True(t, st.PopMaintenance)
			assert.Equal(t, int64(3), st.BufferedMessages, "held messages stay held across a restart")
			_, err = e.b.SetPopMaintenance(false)
			require.NoError(t, err)
			assert.Equal(t, []string{"seen"}, txids(e.pop(PopRequest{Queue: "q", Batch: 10, AutoAck: true})))

			_, err = e.b.SetPushMaintenance(false)
			require.NoError(t, err)
			assert.Equal(t, []string{"held1", "held2", "held3"}, txids(e.pop(PopRequest{Queue: "q", Batch: 10, AutoAck: true})))

			e.reopen()
			st = e.b.Maintenance()
			assert.False(t, st.PushMaintenance)
			assert.False(t, st.PopMaintenance)
		})
	}
}

func TestMaintenanceFileDecoding(t *testing.T) {
	e := newEnv(t)
	_, err := e.b.SetPushMaintenance(true)
	require.NoError(t, err)
	e.push("q", "p", "a")
	good, err := os.ReadFile(filepath.Join(e.dir, "meta", maintFile))
	require.NoError(t, err)
	cases := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"written file decodes", good, true},
		{"short file is refused", good[:6], false},
		{"flipped byte fails the checksum", append(append([]byte{}, good[:12]...), append([]byte{good[12] ^ 1}, good[13:]...)...), false},
		{"wrong magic is refused", append([]byte("XXXX"), good[4:]...), false},
		{"a version 1 file is still read", maintV1File(e.part("q", "p").id), true},
		{"a version 1 file with a flipped byte is refused", func() []byte { b := maintV1File(e.part("q", "p").id); b[20] ^= 1; return b }(), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := meta.DecodeMaintenance(c.data)
			if !c.ok {
				assert.ErrorIs(t, err, ErrMaintenanceFile)
				return
			}
			require.NoError(t, err)
			assert.True(t, r.Push)
			assert.Equal(t, map[[16]byte]uint64{e.part("q", "p").id: 1}, r.Marks)
		})
	}
}

// maintV1File is a version 1 maintenance file: push on, id held at mark 1.
func maintV1File(id [16]byte) []byte {
	b := []byte("CMBM" + "\x01\x01\x01\x00\x00\x00")
	b = append(b, id[:]...)
	b = binary.LittleEndian.AppendUint64(b, 1)
	return binary.LittleEndian.AppendUint64(b, xxhash.Sum64(b))
}

// spec 1.8, 7.7: a queue deleted while its pushes are held takes them along, so
// bufferedMessages no longer counts them.
func TestPushMaintenanceForgetsAHeldQueueThatWasDeleted(t *testing.T) {
	e := newEnv(t)
	_, err := e.b.SetPushMaintenance(true)
	require.NoError(t, err)
	e.push("keep", "p", "k1", "k2", "k3")
	e.push("gone", "p", "g1")
	require.Equal(t, int64(4), e.b.Maintenance().BufferedMessages)
	existed, err := e.b.DeleteQueue("gone")
	require.NoError(t, err)
	require.True(t, existed)
	st := e.b.Maintenance()
	assert.Equal(t, int64(3), st.BufferedMessages)
	assert.Equal(t, 1, st.HeldPartitions)
}
